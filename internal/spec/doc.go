// Package spec decodes the YAML files users write (topologies, scenarios) strictly and with
// positions: unknown fields, wrong types and bad values become errors naming file:line and what
// is allowed. It also owns the unit types those files use (durations, sizes, bandwidths, percents).
// It knows nothing about what the documents mean; testbed and experiment define their schemas.
package spec
