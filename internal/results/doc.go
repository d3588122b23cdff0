// Package results is the results-directory schema: the file and folder names a run leaves
// behind, the CSV headers, and the JSON documents (run.json, stats.json, summary.json) as Go
// types. The runner and the load generator write these types and the report reads them, so a
// field is declared once and docs/results-format.md describes this package.
//
// It holds no behaviour beyond encoding and aggregation and imports no other Continuum package:
// every layer (experiment, loadgen, report, the systems' report sections) may depend on it.
package results
