package redisstate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/horseshoe-crawler/horseshoe/crawl"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// Remote texts. A worker keeps the texts of the pages it fetched in its own
// data dir; the near-duplicate settlement (and the mirror comparisons) of
// another worker need them. The keeper of a data dir answers through Redis,
// no port of its own: it serves a request list, hs:{C/g}:tq:<keeper>, and
// keeps hs:{C/g}:tu:<keeper> alive (a key with a TTL) while it serves. A
// page's summary (PutPage) names its keeper ("k"). A requester runs
// routeScript and BLPOP on a reply key of its own in one pipeline (one round
// trip): the script reads the page's keeper from its summary and, when the
// keeper is alive, queues the request; otherwise it pushes the reason to the
// reply key at once, so the BLPOP does not wait. The keeper reads its data
// dir and pushes the answer (a status byte and the text, at most
// MaxRemoteText bytes) to the reply key, which expires after a few seconds.
//
// Bounded: a request waits at most Store.TextTimeout (2 s by default); a
// keeper gone (left, killed: its alive key expires after keeperTTL), silent,
// or without the text is the settler's "cannot tell" as before
// (crawl.ErrElsewhere: the sketch rule decides), counted in TextStats. A
// summary not yet in Redis (the keeper indexed the page and has not
// committed it yet: milliseconds) is asked again, backing off, within the
// same timeout.

// MaxRemoteText is the largest text a keeper sends (bytes); a larger one is
// answered "too large" and the requester falls back.
const MaxRemoteText = 8 << 20

// DefaultTextTimeout bounds one remote text request.
const DefaultTextTimeout = 2 * time.Second

const (
	keeperTTL     = 3 * time.Second // the alive key's lifetime, renewed every keeperTTL/3
	replyTTL      = 5 * time.Second // an answer nobody took expires
	queueTTL      = time.Minute     // the request list of a keeper that stopped expires
	serveWorkers  = 2               // requests a keeper answers at once
	unknownMemory = time.Minute     // an id whose summary never came is not asked again for this long
)

// Reply status bytes.
const (
	replyOK       = 'o' // the text (or record) follows
	replyMissing  = 'm' // the keeper does not have it
	replyLarge    = 'l' // over MaxRemoteText
	replyUnknown  = 'u' // no summary in Redis (yet)
	replyNoKeeper = 'n' // a summary without a keeper (written before remote texts)
	replyGone     = 'g' // the keeper does not serve (left, killed)
	replyError    = 'e' // the keeper could not read it
)

func status(b byte) string { return string([]byte{b}) }

// TextStats count a worker's remote text requests.
type TextStats struct {
	Asked    int64 // texts asked of other workers (Store.Text; records, Store.Page, are not counted)
	Answered int64 // answered
	FellBack int64 // not answered: the settlement fell back to the sketch rule
	Gone     int64 // of FellBack: the keeper was gone or did not answer in time
	Served   int64 // requests this worker answered for others
	Bytes    int64 // text bytes received
}

// textStats are TextStats as counters.
type textStats struct {
	asked, answered, fellBack, gone, served, bytes atomic.Int64
}

func (c *Crawl) textTag() string                   { return "hs:{" + c.name + "/g}:" }
func (c *Crawl) textQueueKey(keeper string) string { return c.textTag() + "tq:" + keeper }
func (c *Crawl) keeperUpKey(keeper string) string  { return c.textTag() + "tu:" + keeper }

// keeperID is the data dir's keeper id, made once and kept in its meta, so a
// worker restarted on the same dir answers for its pages again. A new id is
// made only when the dir has none: an id that cannot be read (a transient
// storage error) or saved is an error, not a new id that would orphan the
// pages of the old one (their summaries name it).
func keeperID(db *storage.DB) (string, error) {
	b, err := db.GetMeta(storage.MetaKeeper)
	switch {
	case err == nil && len(b) > 0:
		return string(b), nil
	case err != nil && !errors.Is(err, storage.ErrNotFound):
		return "", fmt.Errorf("redisstate: the data dir's keeper id: %w", err)
	}
	var r [6]byte
	_, _ = rand.Read(r[:])
	id := hex.EncodeToString(r[:])
	if err := db.PutMeta(storage.MetaKeeper, []byte(id)); err != nil {
		return "", fmt.Errorf("redisstate: save the data dir's keeper id: %w", err)
	}
	return id, nil
}

// Keeper is the id under which this worker answers for its data dir's pages.
func (s *Store) Keeper() string { return s.keeper }

// TextStats returns the worker's remote text counters.
func (s *Store) TextStats() TextStats {
	t := &s.texts
	return TextStats{Asked: t.asked.Load(), Answered: t.answered.Load(), FellBack: t.fellBack.Load(),
		Gone: t.gone.Load(), Served: t.served.Load(), Bytes: t.bytes.Load()}
}

// routeScript queues a request with the keeper of a page, or answers at once
// why it cannot. KEYS: the page's summary hash, the reply key. ARGV: the
// summary field, the request, the key prefix of the text service, reply TTL
// ms, queue TTL ms, the asking worker's keeper id (a page it keeps itself
// and lacks is missing). Returns the status pushed, or "q" and the keeper when
// queued.
var routeScript = redis.NewScript(`#!lua
local function answer(s)
  redis.call('RPUSH', KEYS[2], s)
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
  return s
end
local rec = redis.call('HGET', KEYS[1], ARGV[1])
if not rec then return answer('u') end
local ok, p = pcall(cjson.decode, rec)
if not ok or type(p) ~= 'table' or type(p.k) ~= 'string' or p.k == '' then return answer('n') end
if p.k == ARGV[6] then return answer('m') end
if redis.call('EXISTS', ARGV[3] .. 'tu:' .. p.k) == 0 then return answer('g') end
local q = ARGV[3] .. 'tq:' .. p.k
redis.call('RPUSH', q, ARGV[2])
redis.call('PEXPIRE', q, ARGV[5])
return 'q' .. p.k
`)

// remote asks the keeper of page id for its text (kind 't') or its record
// (kind 'p'). retryUnknown asks again while the page has no summary yet
// (only for a page known to exist: an indexed candidate).
func (s *Store) remote(ctx context.Context, kind byte, id uint64, retryUnknown bool) ([]byte, byte, error) {
	timeout := s.TextTimeout
	if timeout <= 0 {
		timeout = DefaultTextTimeout
	}
	deadline := time.Now().Add(timeout)
	backoff := 5 * time.Millisecond
	for {
		status, body, err := s.ask(ctx, kind, id, deadline)
		if err != nil || status != replyUnknown || !retryUnknown {
			return body, status, err
		}
		if time.Until(deadline) < backoff {
			return nil, status, nil
		}
		select {
		case <-ctx.Done():
			return nil, status, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

// ask is one request: the route script and the wait for the answer, in one
// pipeline. Status 0 means no answer before the deadline.
func (s *Store) ask(ctx context.Context, kind byte, id uint64, deadline time.Time) (byte, []byte, error) {
	c := s.c
	reply := c.textTag() + "tr:" + s.keeper + ":" + strconv.FormatUint(s.reqSeq.Add(1), 36)
	wait := min(time.Until(deadline), c.maxBlock())
	if dl, ok := ctx.Deadline(); ok {
		// The context bounds the read too (Connect): the server ends the
		// BLPOP first, so the connection is not cut.
		wait = min(wait, time.Until(dl)-50*time.Millisecond)
	}
	if wait < time.Millisecond {
		return 0, nil, nil
	}
	req := fmt.Sprintf("%c %d %d %s", kind, id, deadline.UnixMilli(), reply)
	args := []any{strconv.FormatUint(id, 36), req, c.textTag(), replyTTL.Milliseconds(), queueTTL.Milliseconds(), s.keeper}
	keys := []string{c.recordKey(id), reply}
	waitArg := strconv.FormatFloat(wait.Seconds(), 'f', 3, 64)
	var pop *redis.Cmd
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		routeScript.Eval(ctx, p, keys, args...)
		pop = p.Do(ctx, "BLPOP", reply, waitArg)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, nil, wrap("remote text", err)
	}
	v, err := pop.StringSlice()
	if errors.Is(err, redis.Nil) || len(v) != 2 || v[1] == "" {
		// No answer in time. The keeper is not taken for gone: one slow
		// answer (a GC pause, load) says little. Its alive key judges:
		// a keeper killed or stalled stops renewing it, and it expires
		// within keeperTTL.
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, wrap("remote text", err)
	}
	return v[1][0], []byte(v[1][1:]), nil
}

// maxBlock is the longest a blocking command may wait in a pipeline: the
// client reads a pipeline's replies under its read timeout (3 s by default).
func (c *Crawl) maxBlock() time.Duration {
	rt := 3 * time.Second
	switch o := c.rdb.(type) {
	case *redis.Client:
		rt = o.Options().ReadTimeout
	case *redis.ClusterClient:
		rt = o.Options().ReadTimeout
	}
	if rt <= 0 {
		return time.Hour // no read timeout
	}
	return max(rt-250*time.Millisecond, rt/2)
}

// remoteErr is what Text and Page return for a page another worker keeps
// whose keeper did not answer: crawl.ErrElsewhere and storage.ErrNotFound.
func remoteErr(id uint64, why string) error {
	return fmt.Errorf("page %d: %w (%s; %w)", id, crawl.ErrElsewhere, why, storage.ErrNotFound)
}

var statusWhy = map[byte]string{
	0: "its keeper did not answer in time", replyMissing: "its keeper does not have it",
	replyLarge: "over the remote text size cap", replyUnknown: "no page summary in Redis",
	replyNoKeeper: "its summary names no keeper", replyGone: "its keeper is gone", replyError: "its keeper cannot read it",
}

// remoteText is Text for a page this worker does not keep.
func (s *Store) remoteText(ctx context.Context, id uint64) (string, error) {
	if !s.serving.Load() || s.unknownRecently(id) {
		return "", remoteErr(id, "kept by another worker")
	}
	s.texts.asked.Add(1)
	start := time.Now()
	body, status, err := s.remote(ctx, 't', id, true)
	if err != nil {
		s.texts.fellBack.Add(1)
		return "", fmt.Errorf("%w: %w", remoteErr(id, "redis"), err)
	}
	if status == replyOK {
		s.texts.answered.Add(1)
		s.texts.bytes.Add(int64(len(body)))
		s.latency(time.Since(start))
		return string(body), nil
	}
	s.texts.fellBack.Add(1)
	if status == 0 || status == replyGone {
		s.texts.gone.Add(1)
	}
	if status == replyUnknown {
		s.rememberUnknown(id)
	}
	s.fallbackOnce.Do(func() {
		s.logger.Info("a near-duplicate settlement fell back to the sketch rule: another worker's text was not available (counted in the worker's remote text stats)",
			"page", id, "why", statusWhy[status])
	})
	return "", remoteErr(id, statusWhy[status])
}

// remotePage is Page for a page this worker does not keep: the keeper's
// whole record (its title, for the settlement with title_tokens).
func (s *Store) remotePage(ctx context.Context, id uint64) (*storage.Page, error) {
	if !s.serving.Load() {
		return nil, remoteErr(id, "kept by another worker")
	}
	body, status, err := s.remote(ctx, 'p', id, false)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", remoteErr(id, "redis"), err)
	}
	if status != replyOK {
		return nil, remoteErr(id, statusWhy[status])
	}
	var p storage.Page
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, fmt.Errorf("redisstate: record of page %d from its keeper: %w", id, err)
	}
	return &p, nil
}

// unknownRecently reports whether id's summary was missing for a whole
// request lately (its keeper died before committing it: asking again would
// wait the timeout each time).
func (s *Store) unknownRecently(id uint64) bool {
	s.unkMu.Lock()
	defer s.unkMu.Unlock()
	t, ok := s.unknown[id]
	if ok && time.Since(t) > unknownMemory {
		delete(s.unknown, id)
		return false
	}
	return ok
}

func (s *Store) rememberUnknown(id uint64) {
	s.unkMu.Lock()
	defer s.unkMu.Unlock()
	if s.unknown == nil || len(s.unknown) >= 4096 {
		s.unknown = map[uint64]time.Time{}
	}
	s.unknown[id] = time.Now()
}

// latency records a remote text's round trip (RemoteLatencies).
func (s *Store) latency(d time.Duration) {
	s.latMu.Lock()
	if len(s.lats) < 100_000 {
		s.lats = append(s.lats, d)
	}
	s.latMu.Unlock()
}

// RemoteLatencies returns the durations of the remote texts answered so far.
func (s *Store) RemoteLatencies() []time.Duration {
	s.latMu.Lock()
	defer s.latMu.Unlock()
	return append([]time.Duration(nil), s.lats...)
}

// Serve answers other workers' requests for the texts and records of this
// worker's pages until ctx ends (then, once its pops return, within a
// second, it stops being alive and answers what is queued "gone"). While
// Redis refuses at the start, it waits; when ctx ends before it could start,
// it returns why (nil once it served). It also turns this Store's own remote
// requests on: a worker that does not serve does not ask (every worker of a
// crawl runs the same version).
func (s *Store) Serve(ctx context.Context) error {
	c := s.c
	up := c.keeperUpKey(s.keeper)
	var why error // the last refusal
	for {
		err := c.rdb.Set(ctx, up, "1", keeperTTL).Err()
		if err == nil {
			break
		}
		if why == nil {
			s.logger.Warn("cannot start the remote text service: trying again", "err", wrap("serve texts", err))
		}
		if why == nil || ctx.Err() == nil { // a refusal, not the end of ctx
			why = wrap("serve texts", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("remote text service not started: %w", why)
		case <-time.After(keeperTTL / 3):
		}
	}
	s.serving.Store(true)
	var wg sync.WaitGroup
	for range serveWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.serveLoop(ctx)
		}()
	}
	t := time.NewTicker(keeperTTL / 3)
	defer t.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-t.C:
			if err := c.rdb.Set(ctx, up, "1", keeperTTL).Err(); err != nil && ctx.Err() == nil {
				s.logger.Warn("cannot renew the remote text service's alive key", "err", err)
			}
		}
	}
	wg.Wait()
	s.stopServing()
	return nil
}

// stopServing deletes the alive key and answers the requests still queued.
func (s *Store) stopServing() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c := s.c
	c.rdb.Del(ctx, c.keeperUpKey(s.keeper))
	for {
		req, err := c.rdb.LPop(ctx, c.textQueueKey(s.keeper)).Result()
		if err != nil {
			return
		}
		s.answerGone(ctx, req)
	}
}

// answerGone answers request req "gone": this worker stops serving.
func (s *Store) answerGone(ctx context.Context, req string) {
	if _, _, reply, ok := parseRequest(req); ok {
		s.answer(ctx, reply, status(replyGone))
	}
}

// serveLoop answers requests one by one.
func (s *Store) serveLoop(ctx context.Context) {
	c := s.c
	q := c.textQueueKey(s.keeper)
	for ctx.Err() == nil {
		// BLPop, not Do: go-redis adds the block to the read timeout of
		// the blocking commands it knows, so a read timeout under a
		// second does not cut every pop.
		v, err := c.rdb.BLPop(ctx, time.Second, q).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if ctx.Err() != nil {
			// The pop outlives the cancel (the client does not interrupt
			// it): a request taken now is answered as stopServing does.
			if err == nil && len(v) == 2 {
				stopCtx, cancel := context.WithTimeout(context.Background(), time.Second)
				s.answerGone(stopCtx, v[1])
				cancel()
			}
			continue
		}
		if err != nil || len(v) != 2 {
			s.logger.Debug("remote text request not read", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		kind, id, reply, ok := parseRequest(v[1])
		if !ok {
			continue
		}
		s.texts.served.Add(1)
		s.answer(ctx, reply, s.lookup(kind, id))
	}
}

// parseRequest reads "kind id deadline-ms reply-key"; a request past its
// deadline (its requester gave up) is dropped.
func parseRequest(req string) (kind byte, id uint64, reply string, ok bool) {
	f := strings.Fields(req)
	if len(f) != 4 || len(f[0]) != 1 {
		return 0, 0, "", false
	}
	id, err1 := strconv.ParseUint(f[1], 10, 64)
	dl, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || time.Now().UnixMilli() > dl {
		return 0, 0, "", false
	}
	return f[0][0], id, f[3], true
}

// lookup is the answer to one request from this worker's data dir.
func (s *Store) lookup(kind byte, id uint64) string {
	var body []byte
	var err error
	switch kind {
	case 't':
		var t string
		t, err = s.db.Text(id)
		body = []byte(t)
	case 'p':
		var p *storage.Page
		if p, err = s.db.Page(id); err == nil {
			body, err = json.Marshal(p)
		}
	default:
		return status(replyError)
	}
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return status(replyMissing)
	case err != nil:
		s.logger.Warn("cannot answer another worker's request for a page", "page", id, "err", err)
		return status(replyError)
	case len(body) > MaxRemoteText:
		return status(replyLarge)
	}
	return status(replyOK) + string(body)
}

func (s *Store) answer(ctx context.Context, reply, v string) {
	_, err := s.c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.RPush(ctx, reply, v)
		p.PExpire(ctx, reply, replyTTL)
		return nil
	})
	if err != nil && ctx.Err() == nil {
		s.logger.Debug("remote text answer not sent", "err", err)
	}
}
