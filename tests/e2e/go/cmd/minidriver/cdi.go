package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"k8s.io/apimachinery/pkg/types"
)

// cdiWriter writes one CDI spec per prepared claim (kind k8s.<driver>/claim, one device
// named after the claim UID), the way real drivers hand environment to the runtime.
type cdiWriter struct {
	root, driver string
}

func (w cdiWriter) kind() string { return "k8s." + w.driver + "/claim" }

func (w cdiWriter) deviceID(claim types.UID) string { return w.kind() + "=" + string(claim) }

func (w cdiWriter) path(claim types.UID) string {
	return filepath.Join(w.root, fmt.Sprintf("k8s.%s-claim_%s.json", w.driver, claim))
}

func (w cdiWriter) write(claim types.UID, env map[string]string) error {
	names := make([]string, 0, len(env))
	for name := range env {
		names = append(names, name)
	}
	sort.Strings(names)
	pairs := make([]string, 0, len(names))
	for _, name := range names {
		pairs = append(pairs, name+"="+env[name])
	}
	spec := map[string]any{
		// 0.5.0: the first version that allows device names starting with a digit,
		// which a claim UID may.
		"cdiVersion": "0.5.0",
		"kind":       w.kind(),
		"devices": []any{map[string]any{
			"name":           string(claim),
			"containerEdits": map[string]any{"env": pairs},
		}},
	}
	data, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return err
	}
	// Write-then-rename: the runtime must never read a half-written spec.
	tmp := w.path(claim) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, w.path(claim))
}

func (w cdiWriter) remove(claim types.UID) error {
	if err := os.Remove(w.path(claim)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
