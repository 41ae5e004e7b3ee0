//go:build unix

package redistest

import "syscall"

// Freeze stops the server's process with SIGSTOP: it keeps its connections
// and answers nothing (a hung server) until Thaw. Cleanup thaws it first.
func (s *Server) Freeze() {
	s.tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		s.tb.Fatalf("redistest: SIGSTOP: %v", err)
	}
	s.tb.Cleanup(s.Thaw)
}

// Thaw resumes a frozen server (SIGCONT).
func (s *Server) Thaw() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		s.cmd.Process.Signal(syscall.SIGCONT)
	}
}
