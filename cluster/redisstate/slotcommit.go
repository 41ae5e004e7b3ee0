package redisstate

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The commit of a transaction against a Redis Cluster (docs/SCALE.md, "The
// store's commit on a Cluster"). One script cannot name keys of several
// slots, so the buffered ops are split by hash tag (the keys of one tag share
// a slot) and each group runs commitScript on its own: its checks, then its
// writes, atomically on its node. The groups go in steps, each step one
// pipeline (one round trip, the nodes in parallel):
//
//  0. a check of every group's conditions, writing nothing: a conflict seen
//     here (the common case) costs nothing to undo;
//  1. the groups of the links (marks and queues; their checks: the URLs
//     still unmarked), and the groups that only check records read;
//  2. the groups that take or check records read (evidence, page
//     summaries), with what the page writes of them (one tag: atomic
//     together), one group at a time;
//  3. the other groups (page records, dependents, skip records);
//  4. the end of the lease, alone (its partition's marks went in step 1).
//
// Steps 3 and 4 check nothing, so a check fails only in step 1 or 2, and
// only between step 0 and its group (another worker marked a URL or took a
// record then). The groups applied stand: their marks are this worker's own,
// each queued once, by it, and the rerun of fn finds them seen under the ids
// it gave them; records taken by a group of step 2 before the failed one are
// put back (unless written again meanwhile), for the rerun to find. A crash between
// steps leaves the item in flight, its links seen and queued: its refetch
// finds them seen (docs/SEAMS.md); after step 2 it finds the evidence taken
// and what the page wrote of it written.
type slotCommit struct {
	steps [][]slotGroup // the groups not applied yet, by step
	next  int           // the first step not applied
	taken []txOp        // records taken by the groups applied
}

// The steps of a slotCommit (above).
const (
	stepCheck = iota
	stepLinks
	stepTakes
	stepOther
	stepLease
)

// slotGroup is the ops of one hash tag, as commitScript's keys and args.
type slotGroup struct {
	keys []string
	args []any
	ops  []txOp
}

// hashTag is the part of key Redis Cluster places it by: between the first
// '{' and the next '}' when not empty, else the whole key.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// onCluster: the crawl's client is a Cluster client (slots on many nodes).
func (c *Crawl) onCluster() bool {
	_, ok := c.rdb.(*redis.ClusterClient)
	return ok
}

// newSlotCommit splits ops by hash tag into the steps above.
func newSlotCommit(ops []txOp) *slotCommit {
	var tags []string
	byTag := map[string][]txOp{}
	var leaseEnds []txOp
	for _, op := range ops {
		if op.code == 'E' {
			leaseEnds = append(leaseEnds, op) // the in-flight hash: last
			continue
		}
		tag := hashTag(op.key)
		if _, ok := byTag[tag]; !ok {
			tags = append(tags, tag)
		}
		byTag[tag] = append(byTag[tag], op)
	}
	sc := &slotCommit{steps: make([][]slotGroup, stepLease+1)}
	for _, tag := range tags {
		if onlyMarkers(byTag[tag]) {
			continue // checked in step 0; a group of its own would cost a round trip
		}
		g := newSlotGroup(byTag[tag])
		step := stepOther
		for _, op := range g.ops {
			switch {
			case op.code == 'T' || op.code == 'G' || op.code == 'A':
				step = stepTakes // evidence taken or read (checked)
			case (op.code == 'N' || op.code == 'R') && step == stepOther:
				step = stepLinks
			}
		}
		if onlyReads(g.ops) {
			step = stepLinks // checks alone: nothing to order
		}
		sc.steps[step] = append(sc.steps[step], g)
	}
	// Of step 2, the groups that read-modify-write records (checked reads)
	// last: one applied before a failed group would have its writes applied
	// twice by the rerun; takes are put back instead.
	slices.SortStableFunc(sc.steps[stepTakes], func(a, b slotGroup) int {
		return cmp.Compare(readsChecked(a.ops), readsChecked(b.ops))
	})
	for _, op := range leaseEnds {
		sc.steps[stepLease] = append(sc.steps[stepLease], newSlotGroup([]txOp{op}))
	}
	return sc
}

// readsChecked: 1 when ops check a record read (G, A), else 0.
func readsChecked(ops []txOp) int {
	for _, op := range ops {
		if op.code == 'A' || op.code == 'G' {
			return 1
		}
	}
	return 0
}

// onlyMarkers: ops are checks of partitions' markers (V) alone.
func onlyMarkers(ops []txOp) bool {
	for _, op := range ops {
		if op.code != 'V' {
			return false
		}
	}
	return true
}

// onlyReads: ops are records read (checked at the commit), none written.
func onlyReads(ops []txOp) bool {
	for _, op := range ops {
		if op.code != 'A' && op.code != 'G' {
			return false
		}
	}
	return true
}

func newSlotGroup(ops []txOp) slotGroup {
	g := slotGroup{ops: ops}
	idx := map[string]int{}
	for _, op := range ops {
		i, ok := idx[op.key]
		if !ok {
			g.keys = append(g.keys, op.key)
			i = len(g.keys)
			idx[op.key] = i
		}
		g.args = append(g.args, string(op.code), i, op.field, op.value)
	}
	return g
}

// commitSlots applies t's ops on a Cluster (see slotCommit). A retry after
// Redis refused (ErrUnavailable) goes on from the step it stopped at.
func (t *seamTx) commitSlots() error {
	if t.slots == nil {
		ops := append(t.s.c.markerOps(t.ops), t.ops...)
		t.slots = newSlotCommit(ops)
		ok, err := t.s.c.checkSlots(t.ctx, ops)
		if err != nil {
			t.slots = nil
			return err
		}
		if !ok {
			t.slots = nil
			return errConflict
		}
		t.slots.next = stepLinks
	}
	sc := t.slots
	for sc.next < len(sc.steps) {
		gs := sc.steps[sc.next]
		if len(gs) == 0 {
			sc.next++
			continue
		}
		if sc.next == stepTakes && len(gs) > 1 {
			gs = gs[:1] // one at a time: a take applied is put back if a later one fails
		}
		ok, stale, left, err := t.s.c.applyGroups(t.ctx, gs)
		t.left += stale
		if err != nil {
			sc.steps[sc.next] = append(left, sc.steps[sc.next][len(gs):]...) // Redis refused: the retry goes on from here
			return err
		}
		if !ok {
			// The failed group wrote nothing; the steps before stand, but
			// for the records taken, which the rerun must find.
			if err := t.s.c.putBack(t.ctx, sc.taken); err != nil {
				return err
			}
			t.slots = nil
			return errConflict
		}
		if sc.next == stepTakes {
			for _, op := range gs[0].ops { // one group in this step
				if op.code == 'T' {
					sc.taken = append(sc.taken, op)
				}
			}
		}
		sc.steps[sc.next] = sc.steps[sc.next][len(gs):]
	}
	return nil
}

// putBack sets records taken by a commit that then failed back, each unless
// written again meanwhile (HSETNX).
func (c *Crawl) putBack(ctx context.Context, taken []txOp) error {
	if len(taken) == 0 {
		return nil
	}
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, op := range taken {
			p.HSetNX(ctx, op.key, op.field, op.value)
		}
		return nil
	})
	return wrap("commit put back", err)
}

// checkSlots reads every check of ops (a mark's or an absent record's field
// still absent, a taken or read record's field still holding the value read)
// in one pipeline; false: one fails.
func (c *Crawl) checkSlots(ctx context.Context, ops []txOp) (bool, error) {
	var checks []txOp
	for _, op := range ops {
		switch op.code {
		case 'N', 'A', 'T', 'G', 'V':
			checks = append(checks, op)
		}
	}
	if len(checks) == 0 {
		return true, nil
	}
	cmds, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, op := range checks {
			if op.code == 'V' {
				p.Get(ctx, op.key)
			} else {
				p.HGet(ctx, op.key, op.field)
			}
		}
		return nil
	})
	if err != nil && !isNil(err) {
		return false, wrap("commit check", err)
	}
	for i, op := range checks {
		v, err := cmds[i].(*redis.StringCmd).Result()
		if err != nil && !isNil(err) {
			return false, wrap("commit check", err)
		}
		if op.code == 'V' {
			if p, ok := c.partitionOfTag(hashTag(op.key)); ok && v != op.value {
				return false, c.markerLost(p, v)
			}
			continue
		}
		absent := op.code == 'N' || op.code == 'A'
		if absent && err == nil || !absent && (err != nil || v != op.value) {
			return false, nil
		}
	}
	return true, nil
}

func isNil(err error) bool { return err == redis.Nil }

// applyGroups runs commitScript for each group in one pipeline; false: a
// group's check failed (it wrote nothing; the others may have written);
// stale counts the ends of leases the groups left (commitScript's E).
// Groups whose script Redis lost are run again after loading it. On an
// error, left is the groups not known to have run (a retry runs only those:
// a group run twice would fail its own marks' checks, or queue twice).
func (c *Crawl) applyGroups(ctx context.Context, gs []slotGroup) (ok bool, stale int64, left []slotGroup, err error) {
	ok = true
	for attempt := 0; len(gs) > 0; attempt++ {
		cmds, perr := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, g := range gs {
				commitScript.EvalSha(ctx, p, g.keys, g.args...)
			}
			return nil
		})
		var again []slotGroup
		for i, cmd := range cmds {
			v, cerr := cmd.(*redis.Cmd).Result()
			switch {
			case isNoScript(cerr):
				again = append(again, gs[i])
			case cerr != nil:
				left, err = append(left, gs[i]), cerr
			default:
				n, _ := v.(int64)
				if n == -1 && err == nil {
					left, err = append(left, gs[i]), c.lost("a partition's marker (%s) no longer holds the crawl's generation", gs[i].keys[0])
				} else if n < 1 {
					ok, left = false, append(left, gs[i]) // wrote nothing
				} else {
					stale += n - 1
				}
			}
		}
		if err == nil && perr != nil && len(again) == 0 && !isNoScript(perr) {
			err = perr
		}
		if err != nil || attempt > 0 && len(again) > 0 {
			return false, stale, append(left, again...), wrap("commit", firstNonNil(err, perr))
		}
		if len(again) > 0 {
			if err := commitScript.Load(ctx, c.rdb).Err(); err != nil {
				return false, stale, again, wrap("commit", err)
			}
		}
		gs = again
	}
	return ok, stale, nil, nil
}

func firstNonNil(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
