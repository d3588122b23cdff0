package compose

import (
	"strings"
	"testing"
)

// TestConvertRefusesVolumeNamesOutsideVolumes (issue 41, defect 13): a named volume "." or ".."
// would mount the instance's volumes directory or its whole output directory; names are
// refused as Docker refuses them, with an error naming the service, the volume and the rule.
func TestConvertRefusesVolumeNamesOutsideVolumes(t *testing.T) {
	for _, name := range []string{".", "..", "-x", "_x", ".hidden"} {
		text := "services: {web: {image: x, volumes: [{type: volume, source: '" + name + "', target: /data}]}}\nvolumes: {'" + name + "': {}}"
		sc, err := convertText(t, text)
		if err == nil {
			t.Errorf("volume %q: converted to %s; want refused", name, yamlText(components(sc)[0]["config"].(map[string]any)["volumes"]))
			continue
		}
		for _, says := range []string{"services.web.volumes", `"` + name + `"`, "[a-zA-Z0-9][a-zA-Z0-9_.-]"} {
			if !strings.Contains(err.Error(), says) {
				t.Errorf("volume %q: error %q; want it to say %s", name, err, says)
			}
		}
	}
	for _, name := range []string{"x", "db.data-1_x"} {
		if _, err := convertText(t, "services: {web: {image: x, volumes: ['"+name+":/data']}}\nvolumes: {"+name+": {}}"); err != nil {
			t.Errorf("the valid name %q: %v", name, err)
		}
	}
}

// TestConvertAnonymousVolumesApart (issue 41, defect 14): anonymous volumes at /a/b and /a_b
// get directories of their own, as Docker gives each its own volume.
func TestConvertAnonymousVolumesApart(t *testing.T) {
	sc, err := convertText(t, "services: {web: {image: x, volumes: ['/a/b', '/a_b', '/a-b']}}")
	if err != nil {
		t.Fatal(err)
	}
	vols := components(sc)[0]["config"].(map[string]any)["volumes"].([]any)
	seen := map[string]string{}
	for _, v := range vols {
		src, target, _ := strings.Cut(v.(string), ":")
		if !strings.HasPrefix(src, "volumes/") {
			t.Errorf("volume %s: not under volumes/", v)
		}
		if other, ok := seen[src]; ok {
			t.Errorf("%s and %s share the directory %s", other, target, src)
		}
		seen[src] = target
	}
}
