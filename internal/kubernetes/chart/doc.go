// Package chart holds the tests of the Helm chart in deploy/helm/continuum (which is not Go): it
// lints the chart with the real helm, renders it with the default values and with every
// component on (testdata/all-on.yaml), decodes every rendered document strictly with client-go's
// scheme (an unknown or misspelt field is an error, as the API server's strict field validation
// makes it), and checks what matters: kv's --initial-cluster names every ordinal, the client
// Service reaches the designated writer only, the proxy's RBAC is read-only on what it watches,
// bad values are rejected with a message naming them.
//
// The chart is found from the module root (the directory holding go.mod above the test's working
// directory); helm is $CONTINUUM_HELM, else the clone's .tools/bin/helm (make setup), else PATH.
package chart
