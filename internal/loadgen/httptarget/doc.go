// Package httptarget adapts HTTP endpoints to the load engine: a Target does one request with a
// tuned net/http client and turns status >= 400 into typed errors (http_4xx, http_5xx). Run is
// what `continuum load http` calls. It owns nothing about scheduling or recording (package
// loadgen does that).
package httptarget
