package rtdb

import "testing"

// TestSDKRules runs testdata/auth_sdk_rules.mjs: the official Firebase JS SDK under Node, with
// connectDatabaseEmulator's mockUserToken, against a server enforcing the documentation's rules
// in emulator mode: own data allowed, another user's and invalid values denied
// (PERMISSION_DENIED), a listener on a denied path cancelled, an unauthenticated client denied.
func TestSDKRules(t *testing.T) {
	base := startRTDB(t, func(c *Config) {
		c.Security = Security{RulesFile: writeFile(t, "rules.json", docRules), Emulator: true}
	})
	runSDKScript(t, base, "testdata/auth_sdk_rules.mjs", "rules-test", "ok an unauthenticated client")
}
