package shareddata

import (
	"slices"
	"testing"
)

// TestResumeFromEveryCursor: a subscription to several channels, resumed from the cursor of any
// message it delivered, delivers exactly the messages after that one (issue 30, defect 5: a
// publication's events on two channels shared one cursor, and resuming from the first lost the
// second; on Redis one XREAD could also deliver a newer entry of one stream before an older one
// of another).
func TestResumeFromEveryCursor(t *testing.T) {
	for _, backend := range Backends {
		t.Run(backend, func(t *testing.T) {
			s := openT(t, startBackend(t, backend))
			ctx := ctxT(t)
			const ns = "resume-every" // TestBackends' testResume uses "resume"
			sub, err := s.Subscribe(ctx, ns, "", "a", "b")
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			// Publications, in order; c is not subscribed to. Within one publication the
			// events' order is not promised, across publications it is.
			pubs := [][]Event{
				{{"a", []byte("a1")}, {"b", []byte("b1")}},
				{{"b", []byte("b2")}},
				{{"c", []byte("c1")}, {"a", []byte("a2")}},
				{{"b", []byte("b3")}, {"a", []byte("a3")}, {"c", []byte("c2")}},
				{{"a", []byte("a4")}},
				{{"a", []byte("a5")}, {"b", []byte("b4")}},
			}
			sentinel := []Event{{"b", []byte("end")}}
			for _, p := range append(pubs, sentinel) {
				if err := s.SetAndPublish(ctx, ns, p); err != nil {
					t.Fatal(err)
				}
			}
			// pubOf says which publication a delivered value came from.
			pubOf := map[string]int{}
			for i, p := range append(pubs, sentinel) {
				for _, e := range p {
					pubOf[e.Channel+"="+string(e.Data)] = i
				}
			}
			// readToEnd delivers messages up to the sentinel, checking order across
			// publications, and returns them as channel=value with their cursors.
			readToEnd := func(sub *Subscription) (got, cursors []string) {
				last := -1
				for {
					m := recv(t, sub)
					if m.Gap {
						t.Fatalf("gap %+v", m)
					}
					v := m.Channel + "=" + string(m.Value)
					p, ok := pubOf[v]
					if !ok {
						t.Fatalf("delivered %s, never published on a subscribed channel", v)
					}
					if p < last {
						t.Fatalf("delivered %s (publication %d) after one of publication %d: %v", v, p, last, got)
					}
					last = p
					if v == "b=end" {
						return got, cursors
					}
					got = append(got, v)
					cursors = append(cursors, string(m.Cursor))
				}
			}
			all, cursors := readToEnd(sub)
			var want []string
			for _, p := range pubs {
				for _, e := range p {
					if e.Channel != "c" {
						want = append(want, e.Channel+"="+string(e.Data))
					}
				}
			}
			if !sameSet(all, want) {
				t.Fatalf("delivered %v, want %v", all, want)
			}
			if seen := map[string]bool{}; slices.ContainsFunc(cursors, func(c string) bool { dup := seen[c]; seen[c] = true; return dup }) {
				t.Errorf("cursors are not unique: %v", cursors)
			}
			for i, c := range cursors {
				r, err := s.Subscribe(ctx, ns, Cursor(c), "a", "b")
				if err != nil {
					t.Fatalf("resume from %q: %v", c, err)
				}
				rest, _ := readToEnd(r)
				r.Close()
				if !slices.Equal(rest, all[i+1:]) {
					t.Errorf("resumed from the cursor %q of %s: got %v, want %v", c, all[i], rest, all[i+1:])
				}
			}
		})
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
