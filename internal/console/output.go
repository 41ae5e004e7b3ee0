package console

import (
	"fmt"
	"io"
	"os"
)

// Output opens path for a command's output ("-" or "" is stdout); close
// closes the file.
func Output(path string, stdout io.Writer) (w io.Writer, close func() error, err error) {
	if path == "" || path == "-" {
		return stdout, func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot write output: %w", err)
	}
	return f, f.Close, nil
}
