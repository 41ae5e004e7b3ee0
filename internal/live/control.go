package live

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/horseshoe-crawler/horseshoe/crawl"
)

// The control API, JSON over HTTP under /api/ (README.md, "Control while
// running"):
//
//	GET  /api/status  state, counters, queue, hosts, pages per second
//	POST /api/seeds   {"seeds": ["https://...", ...]}: add seeds
//	POST /api/pause   lease no new URL; fetches in flight finish
//	POST /api/resume  lease again
//	POST /api/stop    a clean stop, as the first Ctrl-C
//
// Every answer is a JSON object; an error is {"error": "..."} with its
// status: 400 (bad body or seed), 404, 405 (with Allow), 409 (no crawl runs
// here, or it is stopping), 413 (body over MaxBodyBytes), 415 (a POST that is
// not application/json), 500.

// MaxBodyBytes bounds the body of a control request.
const MaxBodyBytes = 1 << 20

// Controls are the actions the control API has on the crawl running in this
// process. Stop must be set; a nil AddSeeds, or nil Pause and Resume, are
// actions this crawl does not offer (409): a worker of a shared crawl.
type Controls struct {
	// AddSeeds queues seed URLs as if given at the start and stores them
	// with the crawl's seeds; it returns the canonical seeds and how many
	// were new. An error wrapping a *RequestError is the seeds' fault
	// (400), any other the crawl's (500).
	AddSeeds func(urls []string) (canonical []string, added int, err error)
	// Pause and Resume stop and restart leasing (frontier.Pause).
	Pause, Resume func()
	// Stop ends the crawl as the first interrupt does.
	Stop func()
}

// RequestError marks an error caused by what the request asked for.
type RequestError struct{ Err error }

func (e *RequestError) Error() string { return e.Err.Error() }
func (e *RequestError) Unwrap() error { return e.Err }

// Status is the answer of GET /api/status.
type Status struct {
	// State is running, paused, stopping (after POST /api/stop: fetches in
	// flight finish) or finished (the report of a crawl not running here).
	State      string           `json:"state"`
	Pages      int64            `json:"pages"` // page requests of this run (of all runs when finished)
	Requests   int64            `json:"requests"`
	Duplicates int64            `json:"duplicates"`
	ByClass    map[string]int64 `json:"by_class"`
	Queued     int              `json:"queued"`
	// QueuedUnknown, when set, says why Queued is unknown (a shared
	// crawl's Redis cannot be read: "crawl-wide data unavailable: ...").
	QueuedUnknown string `json:"queued_unknown,omitempty"`
	Active        int    `json:"active"`
	Hosts         int    `json:"hosts"`
	// PagesPerSec is Pages over the time the run was not paused.
	PagesPerSec float64 `json:"pages_per_sec"`
	ElapsedSec  float64 `json:"elapsed_sec"`
	PausedSec   float64 `json:"paused_sec"`
	SeedsAdded  int     `json:"seeds_added"`
}

// control holds the state the API adds to the crawl's: paused or stopping,
// and the clock of the pages-per-second rate.
type control struct {
	c   *Controls // nil: no crawl runs in this process
	now func() time.Time

	mu          sync.Mutex // serializes actions; guards what follows
	state       string
	start       time.Time
	pausedAt    time.Time
	pausedTotal time.Duration
	seedsAdded  int
}

func newControl(c *Controls, now func() time.Time) *control {
	return &control{c: c, now: now, state: "running", start: now()}
}

// route is one endpoint of the API.
type route struct {
	method string
	serve  func(w http.ResponseWriter, r *http.Request)
}

// serveAPI dispatches /api/ requests, with JSON errors for unknown paths
// and methods.
func (h *Handler) serveAPI(w http.ResponseWriter, r *http.Request) {
	routes := map[string]route{
		"/api/status": {http.MethodGet, h.apiStatus},
		"/api/seeds":  {http.MethodPost, h.apiSeeds},
		"/api/pause":  {http.MethodPost, h.apiAction("paused", (*control).pause)},
		"/api/resume": {http.MethodPost, h.apiAction("running", (*control).resume)},
		"/api/stop":   {http.MethodPost, h.apiAction("stopping", (*control).stop)},
	}
	rt, ok := routes[r.URL.Path]
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, "no such endpoint: "+r.URL.Path)
	case r.Method != rt.method && !(rt.method == http.MethodGet && r.Method == http.MethodHead):
		w.Header().Set("Allow", rt.method)
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s wants %s, not %s", r.URL.Path, rt.method, r.Method))
	case r.Method == http.MethodPost && !isJSON(r.Header.Get("Content-Type")):
		// Forms and text/plain, which any web page may post cross-site
		// without a preflight, are refused.
		writeError(w, http.StatusUnsupportedMediaType, "want Content-Type: application/json")
	default:
		rt.serve(w, r)
	}
}

func isJSON(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/json")
}

func (h *Handler) apiStatus(w http.ResponseWriter, r *http.Request) {
	s, err := h.o.Snapshot()
	if err != nil {
		h.logger.Error("status", "err", err)
		writeError(w, http.StatusInternalServerError, "cannot read the crawl's counters: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, h.ctl.status(s))
}

// apiAction serves pause, resume and stop: act changes the state (an error
// is a conflict) and the answer is the new state.
func (h *Handler) apiAction(state string, act func(*control) error) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := act(h.ctl); err != nil {
			writeError(w, http.StatusConflict, err.Error())
			return
		}
		h.logger.Info("control: " + strings.TrimPrefix(r.URL.Path, "/api/"))
		code := http.StatusOK
		if state == "stopping" {
			code = http.StatusAccepted
		}
		writeJSON(w, code, map[string]string{"state": state})
	}
}

// seedsRequest is the body of POST /api/seeds.
type seedsRequest struct {
	Seeds []string `json:"seeds"`
}

func (h *Handler) apiSeeds(w http.ResponseWriter, r *http.Request) {
	var req seedsRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body over %d bytes", MaxBodyBytes))
			return
		}
		writeError(w, http.StatusBadRequest, `want a JSON object {"seeds": ["https://...", ...]}: `+err.Error())
		return
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, "want one JSON object, got more")
		return
	}
	if len(req.Seeds) == 0 {
		writeError(w, http.StatusBadRequest, `no seeds: want {"seeds": ["https://...", ...]}`)
		return
	}
	seeds, added, err := h.ctl.addSeeds(req.Seeds)
	var re *RequestError
	switch {
	case errors.As(err, &re):
		writeError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, errConflict):
		writeError(w, http.StatusConflict, err.Error())
	case err != nil:
		h.logger.Error("control: add seeds", "err", err)
		writeError(w, http.StatusInternalServerError, "cannot add the seeds: "+err.Error())
	default:
		h.logger.Info("control: seeds added", "seeds", len(seeds), "new", added)
		writeJSON(w, http.StatusOK, map[string]any{"seeds": seeds, "added": added})
	}
}

var errConflict = errors.New("conflict")

func conflictf(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errConflict}, a...)...)
}

// checkRunning returns nil when the crawl runs here and is not stopping.
// Called with mu held.
func (c *control) checkRunning() error {
	if c.c == nil {
		return conflictf("no crawl runs in this process (this is the report of a finished crawl)")
	}
	if c.state == "stopping" {
		return conflictf("the crawl is stopping")
	}
	return nil
}

func (c *control) pause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.checkRunning(); err != nil {
		return err
	}
	if c.c.Pause == nil || c.c.Resume == nil {
		return conflictf("this crawl cannot be paused here (a worker of a shared crawl)")
	}
	if c.state != "paused" {
		c.c.Pause()
		c.state, c.pausedAt = "paused", c.now()
	}
	return nil
}

func (c *control) resume() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.checkRunning(); err != nil {
		return err
	}
	if c.c.Resume == nil {
		return conflictf("this crawl cannot be paused here (a worker of a shared crawl)")
	}
	if c.state == "paused" {
		c.c.Resume()
		c.state, c.pausedTotal = "running", c.pausedTotal+c.now().Sub(c.pausedAt)
	}
	return nil
}

// stop stops the crawl; a paused crawl stops without leasing again.
func (c *control) stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c == nil {
		return c.checkRunning()
	}
	if c.state == "paused" {
		c.pausedTotal += c.now().Sub(c.pausedAt)
	}
	if c.state != "stopping" {
		c.c.Stop()
		c.state = "stopping"
	}
	return nil
}

func (c *control) addSeeds(urls []string) ([]string, int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.checkRunning(); err != nil {
		return nil, 0, err
	}
	if c.c.AddSeeds == nil {
		return nil, 0, conflictf("seeds cannot be added here (a worker of a shared crawl: add them to the crawl with a new worker)")
	}
	seeds, added, err := c.c.AddSeeds(urls)
	c.seedsAdded += added
	return seeds, added, err
}

// status adds the API's state and the rate to the crawl's counters s.
func (c *control) status(s crawl.Stats) Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := Status{State: c.state, Pages: s.Pages, Requests: s.Requests, Duplicates: s.Duplicates,
		ByClass: s.ByClass, Queued: s.Queued, Active: s.Active, Hosts: s.Hosts, SeedsAdded: c.seedsAdded}
	if s.QueuedErr != nil {
		st.QueuedUnknown = unavailable(s.QueuedErr)
	}
	if c.c == nil {
		st.State = "finished"
		return st
	}
	now := c.now()
	paused := c.pausedTotal
	if c.state == "paused" {
		paused += now.Sub(c.pausedAt)
	}
	elapsed := now.Sub(c.start)
	st.ElapsedSec, st.PausedSec = elapsed.Seconds(), paused.Seconds()
	if run := (elapsed - paused).Seconds(); run > 0 {
		st.PagesPerSec = float64(s.Pages) / run
	}
	return st
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error": "cannot encode the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}
