package session

import (
	"reflect"
	"testing"
	"time"

	"github.com/horseshoe-crawler/horseshoe/cluster/redisstate"
	"github.com/horseshoe-crawler/horseshoe/report"
)

// TestWorkersViewCopiesEveryCount: a worker record with every count set,
// each to a distinct value, becomes a report row with each count in its own
// field (a swap or a count left out fails), and the totals of one live
// worker are its counts.
func TestWorkersViewCopiesEveryCount(t *testing.T) {
	started, beat := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), time.Date(2025, 3, 1, 13, 0, 0, 0, time.UTC)
	byClass := map[string]int64{"unique": 101, "near_duplicate": 102, "error": 103}
	wi := redisstate.WorkerInfo{ID: "m1-10-a", Host: "m1", PID: 10, Dir: "/data/a",
		Started: started.UnixMilli(), Heartbeat: beat.UnixMilli(), Expires: beat.UnixMilli() + 5000,
		WorkerCounts: redisstate.WorkerCounts{Pages: 1, Requests: 2, ByClass: byClass,
			TextsAsked: 3, TextsAnswered: 4, TextsFellBack: 5,
			LeaseChecks: 6, LeaseGone: 7, LeaseShort: 8, LeaseNoAnswer: 9, StaleLeaseEnds: 10},
		Partitions: 11, PartitionList: "0-10", Queued: 12, InFlight: 13,
		Paused: "out of memory", State: redisstate.WorkerPaused}
	// Every counter of the record is set: one added to it later must be
	// set here, and so copied below.
	rc := reflect.ValueOf(wi.WorkerCounts)
	for i := range rc.NumField() {
		if rc.Field(i).IsZero() {
			t.Fatalf("the record's count %s is not set in this test", rc.Type().Field(i).Name)
		}
	}

	v := workersView("c1", report.WorkersFromRedis, []redisstate.WorkerInfo{wi})
	want := report.Worker{ID: "m1-10-a", Host: "m1", PID: 10, Dir: "/data/a", State: report.WorkerPaused, Paused: "out of memory",
		Started: started, Heartbeat: beat, Partitions: 11, PartitionList: "0-10",
		WorkerCounts: report.WorkerCounts{Pages: 1, Requests: 2, ByClass: byClass, Errors: 103, Queued: 12, InFlight: 13,
			TextsAsked: 3, TextsAnswered: 4, TextsFellBack: 5,
			LeaseChecks: 6, LeaseGone: 7, LeaseShort: 8, LeaseNoAnswer: 9, StaleLeaseEnds: 10}}
	if len(v.Rows) != 1 {
		t.Fatalf("%d rows, want 1", len(v.Rows))
	}
	if got := v.Rows[0]; !reflect.DeepEqual(got, want) {
		t.Errorf("row\n%+v\nwant\n%+v", got, want)
	}
	// Every count of the row is set: one added to the report's counts but
	// not copied from the record stays zero.
	wc := reflect.ValueOf(v.Rows[0].WorkerCounts)
	for i := range wc.NumField() {
		if wc.Field(i).IsZero() {
			t.Errorf("the row's count %s is not copied", wc.Type().Field(i).Name)
		}
	}
	if !reflect.DeepEqual(v.Total, want.WorkerCounts) || v.Paused != 1 || v.Crawl != "c1" || v.From != report.WorkersFromRedis {
		t.Errorf("view %+v, want one paused worker whose counts are the totals %+v", v, want.WorkerCounts)
	}
}
