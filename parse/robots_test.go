package parse

import "testing"

func TestRobotsDirectives(t *testing.T) {
	tests := []struct {
		value, bot             string
		wantNoIndex, wantNoFol bool
	}{
		{"", "horseshoe", false, false},
		{"all", "horseshoe", false, false},
		{"index, follow", "horseshoe", false, false},
		{"noindex", "horseshoe", true, false},
		{"nofollow", "horseshoe", false, true},
		{"noindex, nofollow", "horseshoe", true, true},
		{"NOINDEX,NOFOLLOW", "horseshoe", true, true},
		{"none", "horseshoe", true, true},
		{" None ", "", true, true},
		{"noindex nofollow", "horseshoe", true, true},
		{"noindex;nofollow", "horseshoe", true, true},
		{"noarchive, nosnippet", "horseshoe", false, false},
		{"googlebot: noindex", "horseshoe", false, false},
		{"googlebot: noindex", "GoogleBot", true, false},
		{"horseshoe: nofollow", "HorseShoe", false, true},
		{"horseshoe: noindex, nofollow", "horseshoe", true, true},
		{"otherbot: noindex, nofollow", "horseshoe", false, false},
		{"nofollow, otherbot: noindex", "horseshoe", false, true},
		{"otherbot: none, horseshoe: noindex", "horseshoe", true, false},
		{"horseshoe: noindex", "", false, false},
		{"unavailable_after: 25 Jun 2010 15:00:00 PST, noindex", "horseshoe", true, false},
		{"max-snippet: 20, nofollow", "horseshoe", false, true},
		{"max-image-preview: large", "horseshoe", false, false},
		{"noindexed, nofollowing", "horseshoe", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.value+"/"+tc.bot, func(t *testing.T) {
			noindex, nofollow := RobotsDirectives(tc.value, tc.bot)
			if noindex != tc.wantNoIndex || nofollow != tc.wantNoFol {
				t.Errorf("RobotsDirectives(%q, %q) = %v, %v; want %v, %v",
					tc.value, tc.bot, noindex, nofollow, tc.wantNoIndex, tc.wantNoFol)
			}
		})
	}
}
