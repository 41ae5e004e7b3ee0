//go:build unix

package scaleweb

import (
	"os"
	"syscall"
)

// reopenLogs is the signal that has nginx reopen its log files.
var reopenLogs os.Signal = syscall.SIGUSR1
