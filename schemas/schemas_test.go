package schemas

import (
	"encoding/json"
	"testing"
)

// TestEventSchemaWellFormed catches a schema edit that is not JSON or not draft 2020-12;
// the semantic checks against the decoder live in model/event.
func TestEventSchemaWellFormed(t *testing.T) {
	var s struct {
		Schema     string                     `json:"$schema"`
		ID         string                     `json:"$id"`
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Examples   []json.RawMessage          `json:"examples"`
	}
	if err := json.Unmarshal(EventSchema, &s); err != nil {
		t.Fatalf("event.schema.json is not JSON: %v", err)
	}
	if s.Schema != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %q, want draft 2020-12", s.Schema)
	}
	if s.ID == "" || s.Type != "object" || len(s.Properties) == 0 || len(s.Examples) == 0 {
		t.Errorf("schema lacks $id, type object, properties or examples")
	}
}
