package kubebench

import "github.com/continuum-project/continuum/internal/benchkit"

// Markdown renders a result.
func Markdown(r *Result) string {
	d := benchkit.NewDoc("kube-apiserver on continuum kv and etcd", r.Header)
	d.RawJSON(r)
	return d.String()
}

// ReadResult reads a result's JSON (written next to its Markdown).
func ReadResult(path string) (*Result, error) {
	var r Result
	if err := benchkit.ReadJSON(path, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
