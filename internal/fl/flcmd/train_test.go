package flcmd

import "testing"

// TestReadTrainLine: the fl-job kind's progress reads back exactly what `fl train` prints per
// round and per reconfiguration, and nothing else.
func TestReadTrainLine(t *testing.T) {
	acc, loss := 0.9081, 0.2628
	for _, tc := range []struct {
		line string
		ok   bool
		want TrainLine
	}{
		{roundLine(13, &acc, &loss, 462500), true, TrainLine{Round: 13, Accuracy: "0.9081", Spent: 462500}},
		{roundLine(0, nil, nil, 0), true, TrainLine{Round: 0, Accuracy: "-"}},
		{reconfiguredPrefix + "n9 left in 0.17 s: kept the clusters", true, TrainLine{Round: -1, Reconfigured: true}},
		{"job submitted to http://n1:7070: min-kld, budget 600 per epoch, model 10 MB, 1000 rounds, digits", false, TrainLine{}},
		{"job done: the job's duration 3m20s ended (round 13, accuracy 0.9081)", false, TrainLine{}},
	} {
		got, ok := ReadTrainLine(tc.line)
		if ok != tc.ok || got != tc.want {
			t.Errorf("ReadTrainLine(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}
