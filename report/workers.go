package report

import "time"

// Workers is the state of a crawl shared through Redis: the crawl's totals
// and a row per worker that ever joined, each from its last record.
type Workers struct {
	Crawl string `json:"crawl"`
	// From says where the records come from: "redis" (the live report of a
	// worker, or `crawler report --redis`: every worker's last heartbeat) or
	// "data dirs" (the record each worker kept in its data dir when it left;
	// a worker that died kept none).
	From string `json:"from"`
	// Live, Paused, Left and Dead count the workers by State.
	Live   int `json:"live"`
	Paused int `json:"paused"`
	Left   int `json:"left"`
	Dead   int `json:"dead"`
	// Total sums every worker's counters (those that left or died too: their
	// pages are the crawl's); its Queued and InFlight sum the live workers'.
	Total WorkerCounts `json:"total"`
	Rows  []Worker     `json:"rows"` // by start time; never null
}

// Worker is one worker of a shared crawl.
type Worker struct {
	ID   string `json:"id"`
	Host string `json:"host"` // machine
	PID  int    `json:"pid"`
	Dir  string `json:"dir"` // its data dir on Host
	// State is "live", "paused" (Redis refuses its writes, Paused says
	// why; its heartbeat still runs), "left" (its crawl ended or was
	// stopped: its counters are final) or "dead" (its heartbeat expired
	// without leaving).
	State   string    `json:"state"`
	Paused  string    `json:"paused,omitempty"`
	Started time.Time `json:"started"`
	// Heartbeat is when the worker was last seen: its last heartbeat, or
	// when it left.
	Heartbeat time.Time `json:"heartbeat"`
	// Partitions is how many partitions it holds, PartitionList which.
	Partitions    int    `json:"partitions"`
	PartitionList string `json:"partition_list"`
	WorkerCounts
}

// WorkerCounts are a worker's counters (or a crawl's, summed).
type WorkerCounts struct {
	Pages    int64            `json:"pages"`    // page records that cost a request
	Requests int64            `json:"requests"` // HTTP requests, robots.txt included
	ByClass  map[string]int64 `json:"by_class"` // page records by class
	Errors   int64            `json:"errors"`   // ByClass["error"]
	Queued   int64            `json:"queued"`   // URLs queued in the partitions held
	InFlight int              `json:"in_flight"`
	// Remote texts: candidate originals' texts asked of other workers for
	// the near-duplicate settlement, answered, and fallen back to the
	// sketch rule (the keeper gone or silent).
	TextsAsked    int64 `json:"texts_asked"`
	TextsAnswered int64 `json:"texts_answered"`
	TextsFellBack int64 `json:"texts_fell_back"`
	// Lease checks before requests (docs/SCALE.md): checked, and the
	// requests not sent because the lease of the URL's partition was gone,
	// had less than the margin left, or Redis did not answer; and the
	// commits that left the URL's in-flight record to a new holder of its
	// partition (the worker stalled past its lease after its request).
	LeaseChecks    int64 `json:"lease_checks"`
	LeaseGone      int64 `json:"lease_gone"`
	LeaseShort     int64 `json:"lease_short"`
	LeaseNoAnswer  int64 `json:"lease_no_answer"`
	StaleLeaseEnds int64 `json:"stale_lease_ends"`
}

// Where the records of Workers come from (Workers.From).
const (
	WorkersFromRedis = "redis"
	WorkersFromDirs  = "data dirs"
)

// Worker states (Worker.State).
const (
	WorkerLive   = "live"
	WorkerPaused = "paused"
	WorkerLeft   = "left"
	WorkerDead   = "dead"
)

// StateText is the worker's state as the reports write it: "paused (out of
// memory ...)", "dead (heartbeat expired)".
func (w Worker) StateText() string {
	switch w.State {
	case WorkerPaused:
		return "paused (" + w.Paused + ")"
	case WorkerDead:
		return "dead (heartbeat expired)"
	}
	return w.State
}

// Add adds a worker's counters to the totals; queue and in-flight only for
// a live or paused worker.
func (t *Workers) Add(w Worker) {
	t.Rows = append(t.Rows, w)
	switch w.State {
	case WorkerLive, WorkerPaused:
		if w.State == WorkerLive {
			t.Live++
		} else {
			t.Paused++
		}
		t.Total.Queued += w.Queued
		t.Total.InFlight += w.InFlight
	case WorkerLeft:
		t.Left++
	default:
		t.Dead++
	}
	t.Total.Pages += w.Pages
	t.Total.Requests += w.Requests
	t.Total.Errors += w.Errors
	t.Total.TextsAsked += w.TextsAsked
	t.Total.TextsAnswered += w.TextsAnswered
	t.Total.TextsFellBack += w.TextsFellBack
	t.Total.LeaseChecks += w.LeaseChecks
	t.Total.LeaseGone += w.LeaseGone
	t.Total.LeaseShort += w.LeaseShort
	t.Total.LeaseNoAnswer += w.LeaseNoAnswer
	t.Total.StaleLeaseEnds += w.StaleLeaseEnds
	if t.Total.ByClass == nil {
		t.Total.ByClass = map[string]int64{}
	}
	for c, n := range w.ByClass {
		t.Total.ByClass[c] += n
	}
}
