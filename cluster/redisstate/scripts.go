package redisstate

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The Lua scripts. Each one runs atomically in Redis: no other command runs
// between its first and last step. A script that writes starts with "#!lua"
// so that Redis 7 refuses it whole, before its first step, when it is over
// maxmemory (an OOM error, nothing written) rather than at its first write.
// The keys a script touches share one hash tag (one Cluster slot); keys it
// derives (a host's queue, a candidate's record) are in the same slot as its
// declared keys.

// enqueueScript marks URLs of one partition seen and queues them, each
// unless it was seen. Every script
// that pushes or pops keeps the partition's count of queued items
// (queueCountKey: the host set's key with "n" for "hosts"), in the same
// step as the queue. KEYS: the partition's host set, then per URL its seen
// bucket and its host's queue. ARGV: per URL its field (fingerprint), id,
// item and host. Returns per URL 1, id when queued, or 0, the existing id.
var enqueueScript = redis.NewScript(`#!lua
local out, queued = {}, 0
for i = 0, #ARGV / 4 - 1 do
  local seen, field, id = KEYS[2 + 2*i], ARGV[1 + 4*i], ARGV[2 + 4*i]
  local old = redis.call('HGET', seen, field)
  if old then
    out[#out + 1] = 0
    out[#out + 1] = old
  else
    redis.call('HSET', seen, field, id)
    redis.call('RPUSH', KEYS[3 + 2*i], ARGV[3 + 4*i])
    redis.call('SADD', KEYS[1], ARGV[4 + 4*i])
    queued = queued + 1
    out[#out + 1] = 1
    out[#out + 1] = id
  end
end
if queued > 0 then redis.call('INCRBY', string.sub(KEYS[1], 1, -6) .. 'n', queued) end
return out
`)

// markScript marks one URL seen without queueing it (HSETNX, then the id).
// KEYS: seen bucket. ARGV: field, id. Returns {1, id} or {0, existing id}.
var markScript = redis.NewScript(`#!lua
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old then return {0, old} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return {1, ARGV[2]}
`)

// requeueAll is the Lua fragment that moves every in-flight item of a
// partition back to the head of its host's queue, giving its page back to
// its host's budget (hb, budget.go).
const requeueAll = `
local function requeue(inflight, hosts, qprefix, hb)
  local all = redis.call('HGETALL', inflight)
  for i = 1, #all, 2 do
    redis.call('LPUSH', qprefix .. all[i+1], all[i])
    redis.call('SADD', hosts, all[i+1])
    if tonumber(redis.call('HGET', hb, all[i+1]) or '0') > 0 then redis.call('HINCRBY', hb, all[i+1], -1) end
  end
  redis.call('DEL', inflight)
  if #all > 0 then redis.call('INCRBY', string.sub(hosts, 1, -6) .. 'n', #all / 2) end
  return #all / 2
end
`

// acquireScript takes a partition's lease if nobody holds it, with a new
// epoch, and puts back in the queues what the last holder had in flight. The
// robots.txt entries of the last lease go: robots.txt is fetched once per host
// and lease, so they would not be used again (and Redis holds only the
// entries of hosts crawled under the leases now held).
// A partition whose marker does not hold the crawl's generation is not
// taken: its state was lost (lost.go).
// KEYS: lease, epoch, in-flight hash, host set, robots hash, host budgets,
// marker. ARGV: worker, ttl ms, queue key prefix, generation.
// Returns {epoch, items requeued}, {0, 0} when the lease is held, or
// {-1, 0, the marker's value or false} when the partition's state is lost.
var acquireScript = redis.NewScript(`#!lua` + requeueAll + `
local gen = redis.call('GET', KEYS[7])
if gen ~= ARGV[4] then return {-1, 0, gen} end
if redis.call('EXISTS', KEYS[1]) == 1 then return {0, 0} end
local epoch = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. epoch, 'PX', ARGV[2])
redis.call('DEL', KEYS[5])
local n = requeue(KEYS[3], KEYS[4], ARGV[3], KEYS[6])
return {epoch, n}
`)

// renewScript extends a lease its holder still holds. It runs when Redis is
// over maxmemory too (allow-oom: GET and PEXPIRE of an existing key take no
// memory), so a worker paused by a full Redis keeps its partitions.
// KEYS: lease. ARGV: token ("worker epoch"), ttl ms. Returns 1, or 0 if lost.
var renewScript = redis.NewScript(`#!lua flags=allow-oom
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

// releaseScript gives a lease up, putting what is in flight back first.
// KEYS: lease, in-flight hash, host set, host budgets. ARGV: token, queue
// key prefix. Returns the items requeued, or -1 if the lease was not held.
var releaseScript = redis.NewScript(`#!lua` + requeueAll + `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
local n = requeue(KEYS[2], KEYS[3], ARGV[2], KEYS[4])
redis.call('DEL', KEYS[1])
return n
`)

// popScript leases the head of a host's queue: it moves to the in-flight
// hash, in the same step, so that a worker that dies now loses nothing.
// With a host budget (ARGV[3] above 0) it spends one page of it (KEYS[5],
// budget.go); a host whose budget is spent leaves the host set (its queue
// stays) and the reply is a SPENT error.
// With ARGV[4] "1" (a worker's Frontier) it reads the host's failures
// (KEYS[6], hoststate.go): the reply of a host given up is a DEAD error
// (the host stays in the host set until its queue is drained); else it is
// {item, failures so far}. With ARGV[5] "drain" it pops only from a host
// given up (else an ALIVE error), and the reply is {item, the give-up's
// value}: the queue is drained into records.
// KEYS: lease, host queue, host set, in-flight hash[, host budgets, host failures].
// ARGV: token, host[, host budget, "1"[, "drain"]].
// Returns the item, nil when the queue is empty, or a NOTOWNER, SPENT, DEAD or ALIVE error.
var popScript = redis.NewScript(`#!lua
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return redis.error_reply('NOTOWNER partition lease lost') end
local state = ARGV[4] == '1'
local drain = ARGV[5] == 'drain'
local fails = 0
if state then
  local hv = redis.call('HGET', KEYS[6], ARGV[2])
  local dead = hv and string.sub(hv, 1, 1) == 'd'
  if dead and not drain then return redis.error_reply('DEAD host given up') end
  if drain and not dead then return redis.error_reply('ALIVE host not given up') end
  if drain then fails = hv else fails = tonumber(hv or '0') end
end
local maxh = tonumber(ARGV[3] or '0')
if maxh > 0 and tonumber(redis.call('HGET', KEYS[5], ARGV[2]) or '0') >= maxh then
  redis.call('SREM', KEYS[3], ARGV[2])
  return redis.error_reply('SPENT host page budget spent')
end
local it = redis.call('LPOP', KEYS[2])
if redis.call('LLEN', KEYS[2]) == 0 then redis.call('SREM', KEYS[3], ARGV[2]) end
if not it then return nil end
redis.call('DECR', string.sub(KEYS[3], 1, -6) .. 'n')
redis.call('HSET', KEYS[4], it, ARGV[2])
if maxh > 0 then redis.call('HINCRBY', KEYS[5], ARGV[2], 1) end
if state then return {it, fails} end
return it
`)

// putBackScript returns a leased item to its host's queue (front or back),
// as it now reads (tries counted), unless the lease was lost: then the new
// holder has requeued it already.
// It gives the item's page back to its host's budget (KEYS[5], budget.go).
// KEYS: lease, host queue, host set, in-flight hash, host budgets.
// ARGV: token, host, leased item, item to queue, "front" or "back".
// Returns 1 when requeued, 0 when the lease was lost.
var putBackScript = redis.NewScript(`#!lua
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if redis.call('HDEL', KEYS[4], ARGV[3]) == 0 then return 0 end
if ARGV[5] == 'front' then redis.call('LPUSH', KEYS[2], ARGV[4]) else redis.call('RPUSH', KEYS[2], ARGV[4]) end
redis.call('SADD', KEYS[3], ARGV[2])
redis.call('INCR', string.sub(KEYS[3], 1, -6) .. 'n')
if tonumber(redis.call('HGET', KEYS[5], ARGV[2]) or '0') > 0 then redis.call('HINCRBY', KEYS[5], ARGV[2], -1) end
return 1
`)

// ipReserveScript takes an IP's politeness clock if it is free: it holds it
// for hold ms (until the request is released, or the hold runs out, or a
// worker finds its holder dead: ipEndHoldScript). Redis's clock (TIME) is the
// one clock of every worker. The value is "next-allowed-ms H since-ms token"
// while a request holds it, "next-allowed-ms G token" for the gap after one.
// KEYS: the IP's key. ARGV: hold ms, token.
// Returns {1, 0, 0} when reserved, {0, ms to wait, 0} in a gap, and
// {0, ms to wait, 1, ms held so far, the value} when a request holds it.
var ipReserveScript = redis.NewScript(`#!lua
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local v = redis.call('GET', KEYS[1])
if v then
  local at, kind = string.match(v, '^(%d+) (%a)')
  at = tonumber(at)
  if at > now then
    if kind == 'H' then
      local since = tonumber(string.match(v, '^%d+ H (%d+) ') or now)
      return {0, at - now, 1, now - since, v}
    end
    return {0, at - now, 0}
  end
end
local hold = tonumber(ARGV[1])
redis.call('SET', KEYS[1], (now + hold) .. ' H ' .. now .. ' ' .. ARGV[2], 'PX', hold)
return {1, 0, 0}
`)

// ipHoldToken is the token of an IP key's value (ipReserveScript's forms).
const ipHoldToken = `(string.match(v, '^%d+ H %d+ (.*)$') or string.match(v, '^%d+ G (.*)$'))`

// ipReleaseScript ends a reservation: the IP is free again gap ms from now.
// A reservation that ran out and was taken by another worker is left alone.
// KEYS: the IP's key. ARGV: gap ms, token. Returns 1, or 0 if not held.
var ipReleaseScript = redis.NewScript(`#!lua
local v = redis.call('GET', KEYS[1])
if v and ` + ipHoldToken + ` ~= ARGV[2] then return 0 end
local gap = tonumber(ARGV[1])
if gap <= 0 then redis.call('DEL', KEYS[1]) return 1 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('SET', KEYS[1], (now + gap) .. ' G ' .. ARGV[2], 'PX', gap)
return 1
`)

// ipEndHoldScript ends the hold of a request whose worker is gone, as its
// release would have with gap ms (its request may have just ended), unless
// the value changed since it was read (released, or taken again).
// KEYS: the IP's key. ARGV: the value read (ipReserveScript's held reply),
// gap ms. Returns 1 when ended, 0 when the value changed.
var ipEndHoldScript = redis.NewScript(`#!lua
local v = redis.call('GET', KEYS[1])
if v ~= ARGV[1] then return 0 end
local gap = tonumber(ARGV[2])
if gap <= 0 then redis.call('DEL', KEYS[1]) return 1 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('SET', KEYS[1], (now + gap) .. ' G ' .. ` + ipHoldToken + `, 'PX', gap)
return 1
`)

// workerAliveScript reports whether worker ARGV[1]'s heartbeat has not run
// out (its score in the workers' set is past Redis's clock).
// KEYS: the workers' set. Returns 1 or 0.
var workerAliveScript = redis.NewScript(`#!lua
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not s then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if tonumber(s) > now then return 1 end
return 0
`)

// checkAndAddScript is the duplicate index's check-and-add (dedup.go).
// KEYS: exact bucket, slot counter, stream, supershingle buckets...
// ARGV: exact field, id, record, record key prefix, record bucket mask,
// max candidates, stream length, considered slots (comma separated, with
// commas around: ",3,8,"), need (filter keys a page must share to be a
// candidate), the number of filter keys (the first ones; each key after them,
// a band key, makes a candidate alone), supershingle fields (one per key).
// Returns {1, record} for an exact duplicate; {2, slot, record, ...} for
// candidates not considered yet (nothing added); {0} when the page was added.
var checkAndAddScript = redis.NewScript(`#!lua
local mask = tonumber(ARGV[5])
local function record(slot)
  return redis.call('HGET', ARGV[4] .. (tonumber(slot) % (mask + 1)), slot) or ''
end
local ex = redis.call('HGET', KEYS[1], ARGV[1])
if ex then return {1, record(ex)} end
local considered = ARGV[8]
local maxc = tonumber(ARGV[6])
local need = tonumber(ARGV[9])
local nfilter = tonumber(ARGV[10])
local out = {2}
local count = {}
local found = {}
local nsup = #KEYS - 3
local vals = {}
for i = 1, nsup do
  local v = redis.call('HGET', KEYS[3 + i], ARGV[10 + i])
  vals[i] = v
  if v then
    for slot in string.gmatch(v, '[^,]+') do
      local hit
      if i <= nfilter then
        local n = (count[slot] or 0) + 1
        count[slot] = n
        hit = n == need
      else
        hit = true
      end
      if hit and not found[slot] and not string.find(considered, ',' .. slot .. ',', 1, true) then
        found[slot] = true
        table.insert(out, slot)
        table.insert(out, record(slot))
        if #out > 2 * maxc then return out end
      end
    end
  end
end
if #out > 1 then return out end
local slot = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], ARGV[1], slot)
redis.call('HSET', ARGV[4] .. (slot % (mask + 1)), slot, ARGV[3])
for i = 1, nsup do
  local v = vals[i]
  if v then v = v .. ',' .. slot else v = slot end
  redis.call('HSET', KEYS[3 + i], ARGV[10 + i], v)
end
if tonumber(ARGV[7]) > 0 then
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[7], '*', 'r', slot .. ' ' .. ARGV[2] .. ' ' .. string.sub(ARGV[3], -8))
end
return {0}
`)

// doneScript ends a popped item's lease (a script, not HDEL, so that in a
// transaction with enqueueScript calls it fails with them when Redis lost its
// scripts: see Commit): it removes the item's in-flight record only when the
// partition's epoch is still the one the item was popped under. Else the
// partition was taken since (a worker that stalled past its lease commits
// late): the acquire requeued the item, and the record there now, if any, is
// the new holder's pop, which must stay for its holder (or, if that one dies,
// for the next acquire) to end or requeue.
// KEYS: in-flight hash, epoch. ARGV: item, epoch popped under.
// Returns 1 when removed, 0 when not in flight, -1 when left (epoch moved).
var doneScript = redis.NewScript(`#!lua
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return -1 end
return redis.call('HDEL', KEYS[1], ARGV[1])
`)

var allScripts = []*redis.Script{doneScript, enqueueScript, markScript, acquireScript, renewScript, releaseScript,
	popScript, putBackScript, budgetScript, refundScript, failScript, resetScript, ipReserveScript, ipReleaseScript, ipEndHoldScript, workerAliveScript, checkAndAddScript, pushScript, takeScript, checkLeaseScript,
	queuedScript, partStateScript}

// loadScripts loads every script (after a restart flushed them).
func loadScripts(ctx context.Context, rdb redis.Scripter) error {
	for _, s := range allScripts {
		if err := s.Load(ctx, rdb).Err(); err != nil {
			return err
		}
	}
	return nil
}

func isNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// pipelined runs fill's EVALSHAs in one pipeline (one round trip); when
// Redis lost its scripts (a restart) it loads them and runs the pipeline
// again, which the scripts make safe (a NOSCRIPT call did nothing, and
// every script is a check-then-write that a second run does not repeat).
func (c *Crawl) pipelined(ctx context.Context, op string, fill func(p redis.Pipeliner)) ([]redis.Cmder, error) {
	for attempt := 0; ; attempt++ {
		cmds, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { fill(p); return nil })
		noScript := false
		for _, cmd := range cmds {
			noScript = noScript || isNoScript(cmd.Err())
		}
		if noScript && attempt == 0 {
			if err := loadScripts(ctx, c.rdb); err != nil {
				return nil, wrap(op, err)
			}
			continue
		}
		if err == nil {
			err = firstErr(cmds)
		}
		if err != nil && !isNoScript(err) {
			return cmds, wrap(op, err)
		}
		return cmds, err
	}
}

// run runs one script (EVALSHA, EVAL when the server lost it).
func (c *Crawl) run(ctx context.Context, op string, s *redis.Script, keys []string, args ...any) (any, error) {
	v, err := s.Run(ctx, c.rdb, keys, args...).Result()
	if err != nil {
		return nil, wrap(op, err)
	}
	return v, nil
}

// scriptNames names the scripts (ScriptNames).
var scriptNames = map[string]*redis.Script{
	"done": doneScript, "enqueue": enqueueScript, "mark": markScript, "acquire": acquireScript, "renew": renewScript,
	"release": releaseScript, "pop": popScript, "putBack": putBackScript, "budget": budgetScript, "refund": refundScript,
	"fail": failScript, "reset": resetScript, "ipReserve": ipReserveScript, "ipRelease": ipReleaseScript, "ipEndHold": ipEndHoldScript, "workerAlive": workerAliveScript,
	"checkAndAdd": checkAndAddScript, "push": pushScript, "take": takeScript, "checkLease": checkLeaseScript,
	"queued": queuedScript, "commit": commitScript, "route": routeScript, "pausedBeat": pausedBeatScript,
	"open": openScript, "partState": partStateScript,
}

// ScriptNames maps each script's SHA1 (EVALSHA's first argument) to its
// name: what Redis spends on each script, from its SLOWLOG (`benchtool scale
// -scriptstats`).
func ScriptNames() map[string]string {
	out := make(map[string]string, len(scriptNames))
	for name, s := range scriptNames {
		out[s.Hash()] = name
	}
	return out
}
