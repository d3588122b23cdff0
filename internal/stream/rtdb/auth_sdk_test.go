package rtdb

import (
	"testing"

	"github.com/continuum-project/continuum/internal/stream/rtdb/auth"
)

// TestSDKRules runs testdata/auth_sdk_rules.mjs: the official Firebase JS SDK under Node, with
// connectDatabaseEmulator's mockUserToken, against a server enforcing the documentation's rules
// in emulator mode: own data allowed, another user's and invalid values denied
// (PERMISSION_DENIED), a listener on a denied path cancelled, an unauthenticated client denied.
func TestSDKRules(t *testing.T) {
	base := startRTDB(t, func(c *Config) {
		c.Security = auth.Security{RulesFile: writeFile(t, "rules.json", docRules), Emulator: true}
	})
	runSDKScript(t, base, "testdata/auth_sdk_rules.mjs", "rules-test", "ok an unauthenticated client")
}

// TestSDKRevocation runs testdata/auth_sdk_revoke.mjs: with the official Firebase JS SDK, an
// onDisconnect write the rules deny rejects its promise with PERMISSION_DENIED when it is
// registered, and a listener whose read a rules change denies gets its cancel callback (the
// server's "c" push, the SDK's onListenRevoked_) and no value after it.
func TestSDKRevocation(t *testing.T) {
	base := startRTDB(t, func(c *Config) {
		c.Security = auth.Security{RulesFile: writeFile(t, "rules.json", revokeRules), Emulator: true}
	})
	runSDKScript(t, base, "testdata/auth_sdk_revoke.mjs", "revoke-test", "ok a listener the new rules deny")
}
