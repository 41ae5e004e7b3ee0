// Package redisstate keeps the state that the workers of one crawl share in
// Redis (7.0 or later, standalone or Cluster): the seen-set, the duplicate
// index, the partitioned frontier with its leases and in-flight records, the
// per-IP politeness clocks and robots.txt entries. It is the second
// implementation of the shared-state seams of crawl/storage (the first is
// Badger, one process); pages, raw responses and texts stay in each worker's
// own data dir.
//
// Key layout (docs/SCALE.md has the whole table): every key starts with
// "hs:" and a hash tag naming its slot group, so that the keys a Lua script
// touches share one Redis Cluster slot:
//
//	hs:{C}:meta, hs:{C}:workers, hs:{C}:ids       crawl-wide (C = crawl name)
//	hs:{C/pN}:lease|epoch|hosts|f|r|q:<host>|s:<b> partition N: lease, queues, in flight, seen-set
//	hs:{C/pN}:d:<url>|k                          ... dependents of its URLs, their skip records
//	hs:{C/e}:<kind>                               crawl-wide evidence
//	hs:{C/d}:x:<b>|k:<b>|g:<b>|n                  duplicate index (one slot: atomic check-and-add)
//	hs:{C/i<ip>}                                  politeness clock of one IP
//
// Every operation that Redis refuses because it cannot write (maxmemory
// reached, connection lost, a replica, still loading) returns an
// *UnavailableError (errors.Is(err, ErrUnavailable)): the worker pauses on it
// and retries; the scripts are atomic, so a refused call wrote nothing.
package redisstate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/dedup"
)

// Options fixes a crawl's layout. The first worker of a crawl stores them in
// the crawl's meta hash; later workers read them from there (Open), so every
// worker buckets and partitions alike.
type Options struct {
	Partitions int // host partitions (leased to workers); default 256
	// Capacity is the number of URLs the crawl is sized for: seen-set
	// buckets are made so that each holds 64 to 128 entries at capacity
	// (Redis keeps a hash of up to hash-max-listpack-entries entries as a
	// compact listpack, 256 with EnsureServerConfig; past it, a hash costs
	// about 5x more per entry).
	Capacity int64 // default 10 million
	// Pages is the number of unique pages the duplicate index is sized for
	// (default Capacity/10).
	Pages int64
	// KeysPerPage is the number of supershingle and band keys a page has
	// in the index (IndexPage.Keys and AnyKeys), for sizing: 12 (the
	// default detector: 12 band keys, which cover AltaVista's
	// supershingles), 6 (AltaVista's supershingles, the band stage off)
	// or 15 (C(6,2) or C(6,4) subset keys), plus 12 with Bing's and bands.
	KeysPerPage int
}

func (o Options) withDefaults() Options {
	if o.Partitions <= 0 {
		o.Partitions = 256
	}
	if o.Capacity <= 0 {
		o.Capacity = 10_000_000
	}
	if o.Pages <= 0 {
		o.Pages = max(o.Capacity/10, 1)
	}
	if o.KeysPerPage <= 0 {
		o.KeysPerPage = dedup.DefaultBands
	}
	return o
}

// entriesPerBucket is the largest mean bucket size at capacity (the buckets
// are a power of two, so the mean is 64 to 128): under the listpack limit
// that EnsureServerConfig sets (256) with a Poisson tail that does not reach
// it (P(X > 256) is 8e-24 a bucket at a mean of 128, 4e-8 at 180, 6e-5 at 200,
// 0.8% at 220: a crawl past its capacity loses the compact encoding bucket by
// bucket, from about 1.7 times it).
const entriesPerBucket = 128

// Crawl is one crawl's shared state in Redis. Safe for concurrent use.
type Crawl struct {
	rdb  redis.UniversalClient
	name string

	partitions  int
	seenBuckets int // per partition, power of two
	exactBkts   int // power of two
	superBkts   int // power of two
	recordBkts  int // power of two

	queueCounts bool   // the partitions' counts of queued items are kept (layout 2; queueCountKey)
	gen         string // the crawl's generation (lost.go): in its meta hash and every partition's marker
}

// Open joins crawl name in rdb, creating its layout from o if it is new (an
// existing crawl keeps the layout it was created with; o is then ignored).
func Open(ctx context.Context, rdb redis.UniversalClient, name string, o Options) (*Crawl, error) {
	if name == "" || strings.ContainsAny(name, "{}") {
		return nil, fmt.Errorf("redisstate: invalid crawl name %q (non-empty, no braces)", name)
	}
	o = o.withDefaults()
	c := &Crawl{rdb: rdb, name: name}
	meta := c.metaKey()
	want := map[string]any{
		"version":      layoutVersion,
		"partitions":   o.Partitions,
		"seen_buckets": pow2(o.Capacity / int64(o.Partitions) / entriesPerBucket),
		"exact_bkts":   pow2(o.Pages / entriesPerBucket),
		"super_bkts":   pow2(o.Pages * int64(o.KeysPerPage) / entriesPerBucket),
		"record_bkts":  pow2(o.Pages / entriesPerBucket),
	}
	args := make([]any, 0, 2*len(want)+2)
	for _, k := range []string{"version", "partitions", "seen_buckets", "exact_bkts", "super_bkts", "record_bkts"} {
		args = append(args, k, want[k])
	}
	args = append(args, "gen", newGen())
	v, err := c.run(ctx, "open crawl", openScript, []string{meta, c.idsKey(), c.infoKey(), c.workersKey()}, args...)
	if err != nil {
		if what, ok := lostReply(err); ok {
			return nil, c.lost("its meta hash %s is gone while %s remains", meta, what)
		}
		return nil, err
	}
	m := map[string]string{}
	if kv, ok := v.([]any); ok {
		for i := 0; i+1 < len(kv); i += 2 {
			k, _ := kv[i].(string)
			m[k], _ = kv[i+1].(string)
		}
	}
	if m["version"] != layoutVersion && m["version"] != layoutVersion1 {
		return nil, fmt.Errorf("redisstate: crawl %q has layout %q, this build uses %q (or %q)", name, m["version"], layoutVersion, layoutVersion1)
	}
	c.queueCounts = m["version"] == layoutVersion
	for _, f := range []struct {
		key string
		dst *int
	}{{"partitions", &c.partitions}, {"seen_buckets", &c.seenBuckets}, {"exact_bkts", &c.exactBkts},
		{"super_bkts", &c.superBkts}, {"record_bkts", &c.recordBkts}} {
		n, err := strconv.Atoi(m[f.key])
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("redisstate: crawl %q: bad %s %q in its meta hash", name, f.key, m[f.key])
		}
		*f.dst = n
	}
	c.gen = m["gen"]
	if m["ready"] == "" {
		if err := c.markPartitions(ctx); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// layoutVersion is the layout of the crawls this build creates: 2 keeps
// the partitions' counts of queued items (queueCountKey), which the scripts
// of builds before it do not: a build of layout 1 refuses the crawl rather
// than leave the counts wrong. A crawl of layout 1 is still opened; its
// queue is counted host by host (QueuedIn).
const (
	layoutVersion  = "horseshoe-redis-2"
	layoutVersion1 = "horseshoe-redis-1"
)

// pow2 is the smallest power of two >= max(n, 1).
func pow2(n int64) int {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len64(uint64(n-1))
}

// Name is the crawl's name.
func (c *Crawl) Name() string { return c.name }

// Partitions is the number of host partitions.
func (c *Crawl) Partitions() int { return c.partitions }

// Client is the Redis client the crawl uses.
func (c *Crawl) Client() redis.UniversalClient { return c.rdb }

func (c *Crawl) metaKey() string    { return "hs:{" + c.name + "}:meta" }
func (c *Crawl) workersKey() string { return "hs:{" + c.name + "}:workers" }
func (c *Crawl) idsKey() string     { return "hs:{" + c.name + "}:ids" }
func (c *Crawl) partTag(p int) string {
	return "hs:{" + c.name + "/p" + strconv.Itoa(p) + "}:"
}
func (c *Crawl) dedupTag() string       { return "hs:{" + c.name + "/d}:" }
func (c *Crawl) ipKey(ip string) string { return "hs:{" + c.name + "/i" + ip + "}" }

// EnsureServerConfig raises two listpack limits of the server when they are
// lower: hash-max-listpack-value to 128 bytes (Redis's default is 64; the
// duplicate index's page records are 98 bytes) and hash-max-listpack-entries
// to 256 (default 128; the buckets hold up to 128 on average). A hash past
// either limit leaves the compact listpack encoding, at about 5x the memory
// per entry. It reports whether it changed a setting. Managed services that
// refuse CONFIG need them set in their configuration (docs/SCALE.md). On a
// Cluster it sets every master.
func EnsureServerConfig(ctx context.Context, rdb redis.UniversalClient) (bool, error) {
	if cc, ok := rdb.(*redis.ClusterClient); ok { // every master: CONFIG is per node
		var mu sync.Mutex
		changed := false
		err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			ch, err := EnsureServerConfig(ctx, c)
			mu.Lock()
			changed = changed || ch
			mu.Unlock()
			return err
		})
		return changed, err
	}
	changed := false
	for _, s := range []struct {
		name string
		min  int
	}{{"hash-max-listpack-value", 128}, {"hash-max-listpack-entries", 256}} {
		v, err := rdb.ConfigGet(ctx, s.name).Result()
		if err != nil {
			return false, wrap("config get", err)
		}
		if n, _ := strconv.Atoi(v[s.name]); n >= s.min {
			continue
		}
		if err := rdb.ConfigSet(ctx, s.name, strconv.Itoa(s.min)).Err(); err != nil {
			return false, wrap("config set", err)
		}
		changed = true
	}
	return changed, nil
}

// ErrUnavailable is what every *UnavailableError is (errors.Is).
var ErrUnavailable = errors.New("redis unavailable")

// UnavailableError is an operation Redis did not carry out because it cannot
// now: Reason says why ("out of memory", "connection lost", ...). Nothing of
// the operation was written; the caller pauses and retries it.
type UnavailableError struct {
	Op     string
	Reason string
	Err    error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("redis %s: %s (%v)", e.Op, e.Reason, e.Err) // what to do is the caller's: a writer pauses
}
func (e *UnavailableError) Unwrap() error        { return e.Err }
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// wrap classifies err of operation op: refusals that pass become
// *UnavailableError, anything else (a bug, a script error) is returned with
// op named.
func wrap(op string, err error) error {
	if err == nil || errors.Is(err, redis.Nil) {
		return err
	}
	if r := unavailableReason(err); r != "" {
		return &UnavailableError{Op: op, Reason: r, Err: err}
	}
	return fmt.Errorf("redis %s: %w", op, err)
}

func unavailableReason(err error) string {
	msg := err.Error()
	for _, p := range []struct{ prefix, reason string }{
		{"OOM ", "out of memory (maxmemory reached)"},
		{"READONLY ", "server is a read-only replica"},
		{"LOADING ", "server is loading its data"},
		{"MASTERDOWN ", "replica lost its master"},
		{"BUSY ", "server is running a long script"},
		{"CLUSTERDOWN ", "cluster is down"},
		{"TRYAGAIN ", "cluster slot is migrating"},
		{"MISCONF ", "server cannot persist (disk)"},
	} {
		if strings.HasPrefix(msg, p.prefix) || strings.Contains(msg, ": "+p.prefix) {
			return p.reason
		}
	}
	var ne net.Error
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.As(err, &ne) ||
		errors.Is(err, redis.ErrClosed) || strings.Contains(msg, "connection refused") ||
		strings.Contains(msg, "connection reset") || strings.Contains(msg, "broken pipe") ||
		strings.Contains(msg, "connection pool timeout") {
		return "connection lost"
	}
	return ""
}

// firstErr returns the first error of a pipeline's commands (not redis.Nil).
func firstErr(cmds []redis.Cmder) error {
	for _, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
	}
	return nil
}
