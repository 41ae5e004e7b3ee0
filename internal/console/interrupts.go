package console

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// Stops are a crawl's two stops: Soft ends when the first interrupt
// (SIGINT or SIGTERM) or Stop asks the crawl to finish the pages in flight,
// Hard when a second interrupt asks it to stop at once.
type Stops struct {
	Soft, Hard context.Context
	cancelSoft func()
	logger     *slog.Logger
}

// Stop asks for the soft stop, saying why (e.g. the control API).
func (s *Stops) Stop(why string) {
	s.logger.Warn(why + ": finishing pages in flight (interrupt to stop at once)")
	s.cancelSoft()
}

// WatchInterrupts returns the stops of a crawl under ctx and a func that
// stops watching the signals.
func WatchInterrupts(ctx context.Context, logger *slog.Logger) (*Stops, func()) {
	soft, cancelSoft := context.WithCancel(ctx)
	hard, cancelHard := context.WithCancel(ctx)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-sigs:
			cancelSoft() // before the line, which then says the stop is in effect
			logger.Warn("interrupted: finishing pages in flight (interrupt again to stop at once)")
		case <-soft.Done(): // Stop
		case <-hard.Done():
			return
		}
		select {
		case <-sigs:
		case <-hard.Done():
			return
		}
		cancelHard()
		logger.Warn("stopping now")
	}()
	return &Stops{Soft: soft, Hard: hard, cancelSoft: cancelSoft, logger: logger}, func() {
		signal.Stop(sigs)
		cancelSoft()
		cancelHard()
	}
}
