package auth

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// ParseJWTKeys reads the public keys ID tokens are checked with, in any of the forms they are
// published in: a JWKS (`{"keys": [{"kty": "RSA", "kid", "n", "e"}]}`), a JSON object of key id
// to PEM certificate, or PEM blocks (CERTIFICATE, PUBLIC KEY, RSA PUBLIC KEY) without key ids.
func ParseJWTKeys(b []byte) (JWTKeys, error) {
	keys := JWTKeys{ByID: map[string]*rsa.PublicKey{}}
	fail := func(err error) (JWTKeys, error) { return JWTKeys{}, err }
	trimmed := strings.TrimSpace(string(b))
	if strings.HasPrefix(trimmed, "{") {
		var jwks struct {
			Keys []struct{ Kty, Kid, N, E string } `json:"keys"`
		}
		if err := json.Unmarshal(b, &jwks); err == nil && jwks.Keys != nil {
			for i, k := range jwks.Keys {
				if k.Kty != "RSA" {
					return fail(fmt.Errorf("key %d (%q): kty %q: only RSA keys are used (RS256)", i, k.Kid, k.Kty))
				}
				n, err1 := base64.RawURLEncoding.DecodeString(k.N)
				e, err2 := base64.RawURLEncoding.DecodeString(k.E)
				if err1 != nil || err2 != nil || len(n) == 0 || len(e) == 0 || len(e) > 4 {
					return fail(fmt.Errorf("key %d (%q): n and e must be base64url big-endian integers", i, k.Kid))
				}
				keys.ByID[k.Kid] = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
			}
			return keys, nil
		}
		var certs map[string]string
		if err := json.Unmarshal(b, &certs); err != nil {
			return fail(errors.New(`want a JWKS {"keys": [...]}, a JSON object of key id to PEM certificate, or PEM blocks`))
		}
		for kid, p := range certs {
			k, err := pemKeys([]byte(p))
			if err != nil || len(k) != 1 {
				return fail(fmt.Errorf("key %q: want one PEM certificate or public key (%v)", kid, err))
			}
			keys.ByID[kid] = k[0]
		}
		return keys, nil
	}
	ks, err := pemKeys(b)
	if err != nil {
		return fail(err)
	}
	keys.Unnamed = ks
	return keys, nil
}

// JWTKeys are the RSA public keys ID tokens may be signed with.
type JWTKeys struct {
	ByID    map[string]*rsa.PublicKey // by the kid a token's header names
	Unnamed []*rsa.PublicKey          // given without a key id: any of them may verify a token
}

func pemKeys(b []byte) ([]*rsa.PublicKey, error) {
	var out []*rsa.PublicKey
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		var pub any
		var err error
		switch blk.Type {
		case "CERTIFICATE":
			var c *x509.Certificate
			if c, err = x509.ParseCertificate(blk.Bytes); err == nil {
				pub = c.PublicKey
			}
		case "PUBLIC KEY":
			pub, err = x509.ParsePKIXPublicKey(blk.Bytes)
		case "RSA PUBLIC KEY":
			pub, err = x509.ParsePKCS1PublicKey(blk.Bytes)
		default:
			return nil, fmt.Errorf("PEM block %q: want CERTIFICATE, PUBLIC KEY or RSA PUBLIC KEY", blk.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("PEM block %q: %w", blk.Type, err)
		}
		k, ok := pub.(*rsa.PublicKey)
		if !ok {
			return nil, fmt.Errorf("PEM block %q: not an RSA key (ID tokens are RS256)", blk.Type)
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM block found")
	}
	return out, nil
}
