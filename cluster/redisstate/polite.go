package redisstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Per-IP politeness clocks, crawl-wide: hosts of one IP may be in partitions
// of different workers, so the clock of an IP is one Redis key that a worker
// reserves before a request (ipReserveScript) and releases after it with the
// gap the next request must wait (ipReleaseScript). Redis's clock is the
// only clock, so workers on machines whose clocks differ agree.

// Reservation is a held IP clock.
type Reservation struct {
	ip, token string
}

// ReserveIP takes ip's clock for at most hold (the longest a request may take:
// a worker that dies holding it blocks the IP that long). It returns the
// reservation, or how long to wait when the IP's gap is not over, or, when
// another request holds the IP, how long that hold may last at most (held).
func (c *Crawl) ReserveIP(ctx context.Context, ip, token string, hold time.Duration) (r *Reservation, wait time.Duration, held bool, err error) {
	v, err := c.run(ctx, "reserve ip", ipReserveScript, []string{c.ipKey(ip)}, max(hold.Milliseconds(), 1), token)
	if err != nil {
		return nil, 0, false, err
	}
	rep, err := parseReserve(v)
	if err != nil {
		return nil, 0, false, err
	}
	if rep.reserved {
		return &Reservation{ip: ip, token: token}, 0, false, nil
	}
	return nil, rep.wait, rep.held != nil, nil
}

// reserveReply is ipReserveScript's reply.
type reserveReply struct {
	reserved bool
	wait     time.Duration // until the IP's clock is free, when not reserved
	held     *ipHold       // the request holding it, if one does
}

// ipHold is a request's hold of an IP's clock, as read by a reservation.
type ipHold struct {
	value  string        // the key's value (ipEndHoldScript compares it)
	worker string        // the worker that holds it
	host   string        // the host it was reserved for
	age    time.Duration // how long it has been held
}

func parseReserve(v any) (reserveReply, error) {
	rep, ok := v.([]any)
	if !ok || (len(rep) != 3 && len(rep) != 5) {
		return reserveReply{}, fmt.Errorf("redisstate: reserve ip: unexpected reply %v", v)
	}
	if rep[0] == int64(1) {
		return reserveReply{reserved: true}, nil
	}
	ms, _ := rep[1].(int64)
	r := reserveReply{wait: time.Duration(ms) * time.Millisecond}
	if rep[2] == int64(1) {
		h := &ipHold{}
		if len(rep) == 5 {
			age, _ := rep[3].(int64)
			h.age = time.Duration(age) * time.Millisecond
			h.value, _ = rep[4].(string)
			// "at H since worker host seq"
			if f := strings.Fields(h.value); len(f) == 6 {
				h.worker, h.host = f[3], f[4]
			}
		}
		r.held = h
	}
	return r, nil
}

// workerAlive reports whether worker id's heartbeat has not run out.
func (c *Crawl) workerAlive(ctx context.Context, id string) (bool, error) {
	v, err := c.run(ctx, "worker alive", workerAliveScript, []string{c.workersKey()}, id)
	if err != nil {
		return false, err
	}
	return v == int64(1), nil
}

// endHold ends h on ip when its value is still the one read, as its
// release would have with gap.
func (c *Crawl) endHold(ctx context.Context, ip string, h *ipHold, gap time.Duration) (bool, error) {
	v, err := c.run(ctx, "end ip hold", ipEndHoldScript, []string{c.ipKey(ip)}, h.value, gap.Milliseconds())
	if err != nil {
		return false, err
	}
	return v == int64(1), nil
}

// ReleaseIP ends a reservation: the IP's next request waits gap from now.
func (c *Crawl) ReleaseIP(ctx context.Context, r *Reservation, gap time.Duration) error {
	_, err := c.run(ctx, "release ip", ipReleaseScript, []string{c.ipKey(r.ip)}, gap.Milliseconds(), r.token)
	return err
}

// Robots.txt entries per host, in the host's partition (hash r): fetched once
// per host and lease. An entry carries the lease epoch it was fetched under;
// Robots returns it only to a holder of the same epoch, so a new holder of
// the partition fetches robots.txt again, once. Taking a lease deletes the
// last lease's entries (acquireScript).

// RobotsEntry is a host's robots.txt as fetched.
type RobotsEntry struct {
	Epoch   int64     `json:"e"`
	Status  int       `json:"s"`
	Body    string    `json:"b,omitempty"`
	Fetched time.Time `json:"t"`
	// A transport failure (fetch.RobotsEntry's Err and Incurable).
	Err       string `json:"x,omitempty"`
	Incurable bool   `json:"i,omitempty"`
}

func (c *Crawl) robotsKey(p int) string { return c.partTag(p) + "r" }

// Robots returns host's entry fetched under lease l, or ok false.
func (c *Crawl) Robots(ctx context.Context, l Lease, host string) (e RobotsEntry, ok bool, err error) {
	b, err := c.rdb.HGet(ctx, c.robotsKey(l.Partition), host).Bytes()
	if errors.Is(err, redis.Nil) {
		return e, false, nil
	}
	if err != nil {
		return e, false, wrap("robots", err)
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return e, false, fmt.Errorf("redisstate: robots entry of %s: %w", host, err)
	}
	return e, e.Epoch == l.Epoch, nil
}

// PutRobots stores host's entry under lease l.
func (c *Crawl) PutRobots(ctx context.Context, l Lease, host string, e RobotsEntry) error {
	e.Epoch = l.Epoch
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return wrap("put robots", c.rdb.HSet(ctx, c.robotsKey(l.Partition), host, b).Err())
}

var _ = strconv.Itoa
