package report

import "github.com/continuum-project/continuum/internal/results"

// InstancePoint is a row of instances.csv.
type InstancePoint struct {
	T                    float64
	Series, Instance     string
	Requests, OK, Errors float64
	MeanMS               float64
}

func loadInstances(path string, w *Workload) error {
	return results.ReadCSV(path, []string{"t_s", "series", "instance", "requests"}, func(r results.CSVRow) error {
		v, err := r.Floats("t_s", "requests", "ok", "errors", "mean_ms")
		if err != nil {
			return err
		}
		w.Instances = append(w.Instances, InstancePoint{T: v[0], Series: r.Str("series"), Instance: r.Str("instance"),
			Requests: v[1], OK: v[2], Errors: v[3], MeanMS: v[4]})
		return nil
	})
}
