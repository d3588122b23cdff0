package gcfloor

import "testing"

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		live, floor uint64
		want        int
	}{
		{0, 128 * mib, 100},         // nothing measured yet
		{20 * mib, 128 * mib, 540},  // goal = 20 MiB * 6.4 = 128 MiB
		{64 * mib, 128 * mib, 100},  // the default already reaches the floor
		{500 * mib, 128 * mib, 100}, // large heaps are untouched
		{1, 128 * mib, 10000},       // capped
		{10 * mib, 0, 100},          // no floor
		{32 * mib, 96 * mib, 200},   // exact
		{63 * mib, 128 * mib, 103},  // just under half the floor
	} {
		if got := Percent(tc.live, tc.floor); got != tc.want {
			t.Errorf("Percent(%d, %d) = %d, want %d", tc.live, tc.floor, got, tc.want)
		}
	}
}
