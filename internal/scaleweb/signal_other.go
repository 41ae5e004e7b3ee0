//go:build !unix

package scaleweb

import "os"

// reopenLogs is nil where nginx takes no signals (Rotate says so).
var reopenLogs os.Signal
