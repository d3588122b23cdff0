// Package tree is the realtime database's data model, with no storage: a value is a tree (nil,
// a Leaf holding a JSON scalar's canonical text, or a map of children, never empty), parsed and
// normalized from JSON as Firebase does (arrays become objects, nulls and empty objects vanish,
// ".value" unwraps, keys are validated), with server values ({".sv": ...}) resolved against the
// value they replace. It also holds paths (ParsePath, ValidateKey), queries (orderBy, limits,
// bounds: Query.Apply), ETags, and push IDs (PushIDs).
//
// It does not own where trees live (package store) or how they travel (rest, sse, ws).
package tree
