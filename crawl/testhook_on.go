//go:build horseshoe_testhooks && linux

package crawl

import (
	"context"
	"fmt"
	"net/http/httptrace"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
)

// Test hooks of a crawler built with the horseshoe_testhooks tag (cmd/crawler
// TestSharedFenceStalledWorker and TestSharedFenceStalled* build one), set
// from the environment. Each stops the whole process (SIGSTOP, as a stall
// would: the heartbeat stops too) once, at one point of one URL's lease:
//   - HORSESHOE_TEST_STOP_BEFORE=URL right after URL's pop, before its lease
//     check;
//   - HORSESHOE_TEST_STOP_BEFORE_ROBOTS=URL right after URL's pop, before the
//     robots.txt of its host is looked up (and requested);
//   - HORSESHOE_TEST_STOP_CONNECTED=URL after URL's lease check, once the
//     connection of its request is made (httptrace's ConnectDone, in the
//     dial) and before the request is written.
//
// HORSESHOE_TEST_NO_LEASE_CHECK turns lease checks off (the tests show the
// duplicate request each prevents): 1 all of them, "robots" robots.txt's,
// "recheck" the check once a page's connection is obtained.
var (
	stopBefore       = os.Getenv("HORSESHOE_TEST_STOP_BEFORE")
	stopBeforeRobots = os.Getenv("HORSESHOE_TEST_STOP_BEFORE_ROBOTS")
	stopConnected    = os.Getenv("HORSESHOE_TEST_STOP_CONNECTED")
	noLeaseCheck     = os.Getenv("HORSESHOE_TEST_NO_LEASE_CHECK")
	stopped          atomic.Bool
)

func leaseCheckOff(which string) bool { return noLeaseCheck == "1" || noLeaseCheck == which }

func beforeLeaseCheck(target string) { stopAt(stopBefore, target, "before the request of") }

func beforeRobots(target string) { stopAt(stopBeforeRobots, target, "before robots.txt for") }

func stallInConnect(ctx context.Context, target string) context.Context {
	if stopConnected == "" || target != stopConnected {
		return ctx
	}
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		ConnectDone: func(_, _ string, err error) {
			if err == nil {
				stopAt(stopConnected, target, "connected, before writing the request of")
			}
		},
	})
}

func stopAt(want, target, where string) {
	if want == "" || target != want || stopped.Swap(true) {
		return
	}
	fmt.Fprintf(os.Stderr, "%s test hook: stopping %s %s\n", time.Now().Format(time.StampMicro), where, target)
	// To this thread: a process-directed SIGSTOP may let the sender run on
	// (and send the request) until another thread takes the signal.
	runtime.LockOSThread()
	syscall.Tgkill(os.Getpid(), syscall.Gettid(), syscall.SIGSTOP)
	runtime.UnlockOSThread()
	fmt.Fprintf(os.Stderr, "%s test hook: resumed %s %s\n", time.Now().Format(time.StampMicro), where, target)
}
