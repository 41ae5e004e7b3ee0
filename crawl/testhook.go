//go:build !horseshoe_testhooks || !linux

package crawl

import "context"

// Test hooks: no-ops but in builds with the horseshoe_testhooks tag
// (testhook_on.go).

func beforeLeaseCheck(string) {}

func beforeRobots(string) {}

func stallInConnect(ctx context.Context, _ string) context.Context { return ctx }

func leaseCheckOff(string) bool { return false }
