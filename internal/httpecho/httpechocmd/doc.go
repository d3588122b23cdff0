// Package httpechocmd is `continuum echo`: the HTTP echo service scenarios deploy as a
// service instance (delay, CPU work and response size changeable at run time).
package httpechocmd
