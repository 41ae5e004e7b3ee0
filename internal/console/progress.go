// Package console is the terminal side of 'crawler crawl': the refreshing
// progress line drawn on stderr while a crawl runs.
package console

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/horseshoe-crawler/horseshoe/crawl"
)

// IsTerminal reports whether w is a character device such as a terminal,
// where a refreshing progress line makes sense. It needs no terminal library:
// os.File.Stat's ModeCharDevice is enough (a redirect to /dev/null also
// counts, which is harmless).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// ProgressOptions configures a Progress line.
type ProgressOptions struct {
	// Every is the refresh interval of Run (default 500ms).
	Every time.Duration
	// MaxPages is this run's page budget; when > 0 the line shows an ETA.
	MaxPages int
	// Window is the span over which the rate is measured (default 10s).
	Window time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Progress draws one refreshing progress line on a terminal: pages fetched,
// URLs queued, pages per second, duplicate share, active hosts, and an ETA
// when the run has a page budget. It redraws with a carriage return and
// blank padding, without terminal escape sequences. Log output written
// through Writer clears the line first and redraws it after, so that log
// lines and the progress line do not overwrite each other.
//
// Progress is safe for concurrent use.
type Progress struct {
	w        io.Writer
	snapshot func() crawl.Stats
	o        ProgressOptions

	mu      sync.Mutex
	start   time.Time
	samples []rateSample // within the window, oldest first
	line    string       // the line on screen, "" when none
}

type rateSample struct {
	at    time.Time
	pages int64
}

// NewProgress returns a progress line drawn on w from the snapshots that
// snapshot returns.
func NewProgress(w io.Writer, snapshot func() crawl.Stats, o ProgressOptions) *Progress {
	if o.Every <= 0 {
		o.Every = 500 * time.Millisecond
	}
	if o.Window <= 0 {
		o.Window = 10 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Progress{w: w, snapshot: snapshot, o: o, start: o.Now()}
}

// Run redraws the line every o.Every until ctx is done, then draws it a last
// time and ends it with a newline, so it stays above what follows.
func (p *Progress) Run(ctx context.Context) {
	t := time.NewTicker(p.o.Every)
	defer t.Stop()
	p.Update()
	for {
		select {
		case <-ctx.Done():
			p.Finish()
			return
		case <-t.C:
			p.Update()
		}
	}
}

// Update takes a snapshot and redraws the line.
func (p *Progress) Update() {
	s := p.snapshot()
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.o.Now()
	line := p.format(s, p.rate(now, s.Pages), now)
	p.draw(line)
}

// Finish redraws the line and ends it with a newline; later output starts
// on a fresh line.
func (p *Progress) Finish() {
	p.Update()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.line != "" {
		io.WriteString(p.w, "\n")
		p.line = ""
	}
}

// Writer returns a writer for log output that shares the terminal with the
// line: each write clears the line, writes, and redraws the line when the
// output ended with a newline.
func (p *Progress) Writer() io.Writer { return progressWriter{p} }

type progressWriter struct{ p *Progress }

func (pw progressWriter) Write(b []byte) (int, error) {
	p := pw.p
	p.mu.Lock()
	defer p.mu.Unlock()
	line := p.line
	if line != "" {
		if _, err := io.WriteString(p.w, "\r"+strings.Repeat(" ", len(line))+"\r"); err != nil {
			return 0, fmt.Errorf("progress: %w", err)
		}
		p.line = ""
	}
	n, err := p.w.Write(b)
	if err != nil {
		return n, fmt.Errorf("progress: %w", err)
	}
	if line != "" && len(b) > 0 && b[len(b)-1] == '\n' {
		p.draw(line)
	}
	return n, nil
}

// draw replaces the line on screen; p.mu is held.
func (p *Progress) draw(line string) {
	pad := ""
	if n := len(p.line) - len(line); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	io.WriteString(p.w, "\r"+line+pad)
	p.line = line
}

// rate returns pages per second over the window and records the sample;
// p.mu is held.
func (p *Progress) rate(now time.Time, pages int64) float64 {
	p.samples = append(p.samples, rateSample{now, pages})
	// Keep one sample at or beyond the window's start as the base.
	cut := 0
	for cut+1 < len(p.samples) && now.Sub(p.samples[cut+1].at) >= p.o.Window {
		cut++
	}
	p.samples = p.samples[cut:]
	base := p.samples[0]
	if len(p.samples) == 1 {
		base = rateSample{at: p.start}
	}
	dt := now.Sub(base.at).Seconds()
	if dt <= 0 {
		return 0
	}
	return float64(pages-base.pages) / dt
}

// format renders one progress line, kept under 80 columns for common
// figures so that it does not wrap.
func (p *Progress) format(s crawl.Stats, rate float64, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] %s fetched, %s queued, %s/s, %.1f%% dup, %d/%d hosts active",
		shortDuration(now.Sub(p.start)), groupDigits(s.Pages), groupDigits(int64(s.Queued)),
		formatRate(rate), 100*s.DuplicateRatio(), s.Active, s.Hosts)
	if p.o.MaxPages > 0 {
		left := int64(p.o.MaxPages) - s.Pages
		switch {
		case left <= 0:
			b.WriteString(", budget spent")
		case rate > 0:
			eta := time.Duration(float64(left) / rate * float64(time.Second))
			fmt.Fprintf(&b, ", ETA %s", shortDuration(eta))
		default:
			b.WriteString(", ETA ?")
		}
	}
	return b.String()
}

// shortDuration renders d as 45s, 3m07s or 2h05m.
func shortDuration(d time.Duration) string {
	d = d.Round(time.Second)
	if d < 0 {
		d = 0
	}
	h, m, s := int(d/time.Hour), int(d%time.Hour/time.Minute), int(d%time.Minute/time.Second)
	switch {
	case h > 0:
		return fmt.Sprintf("%dh%02dm", h, m)
	case m > 0:
		return fmt.Sprintf("%dm%02ds", m, s)
	default:
		return fmt.Sprintf("%ds", s)
	}
}

// formatRate formats a rate with one decimal and thousands separators.
func formatRate(r float64) string {
	if math.IsNaN(r) || math.IsInf(r, 0) || r < 0 {
		r = 0
	}
	s := strconv.FormatFloat(r, 'f', 1, 64)
	i := strings.IndexByte(s, '.')
	whole, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return s
	}
	return groupDigits(whole) + s[i:]
}

// groupDigits formats n with comma thousands separators.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
