package kvprefix

import (
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/continuum-project/continuum/internal/proxy/discovery"
)

func TestNewFromYAML(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		want    Config
		wantErr []string
	}{{
		name: "all fields",
		yaml: "endpoints: [10.0.0.1:2379, 'http://10.0.0.2:2379']\nprefix: /svc/\ndial_timeout: 2s\n",
		want: Config{Endpoints: []string{"10.0.0.1:2379", "http://10.0.0.2:2379"}, Prefix: "/svc/"},
	}, {
		name: "defaults",
		yaml: "{}",
		want: Config{Endpoints: []string{DefaultEndpoint}, Prefix: DefaultPrefix},
	}, {
		name: "no value (`- kv:`): defaults",
		yaml: "~",
		want: Config{Endpoints: []string{DefaultEndpoint}, Prefix: DefaultPrefix},
	}, {
		name:    "unknown key with suggestion",
		yaml:    "endpoints: [a:1]\nprefx: /svc/\n",
		wantErr: []string{"2:1", `unknown field "prefx"`, `did you mean "prefix"`},
	}, {
		name:    "prefix without trailing slash",
		yaml:    "prefix: /svc\n",
		wantErr: []string{"prefix", `ending with "/"`},
	}, {
		name:    "bad endpoints",
		yaml:    "endpoints: [nohostport, 'https://a:1']\n",
		wantErr: []string{"endpoints[0]", "nohostport", "endpoints[1]", "TLS is not supported"},
	}, {
		name:    "no endpoints",
		yaml:    "endpoints: []\n",
		wantErr: []string{"endpoints: at least one"},
	}, {
		name:    "dial timeout without unit",
		yaml:    "dial_timeout: 5\n",
		wantErr: []string{"dial_timeout", "unit"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(tc.yaml), &doc); err != nil {
				t.Fatal(err)
			}
			src, err := NewFromYAML(doc.Content[0])
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error, want %q", tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := src.(*Source).cfg
			if !reflect.DeepEqual(got.Endpoints, tc.want.Endpoints) || got.Prefix != tc.want.Prefix {
				t.Fatalf("config %+v, want %+v", got, tc.want)
			}
		})
	}
	if _, ok := discovery.LookupSource(YAMLKey); !ok {
		t.Fatalf("%q not registered", YAMLKey)
	}
}
