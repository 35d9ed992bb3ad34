package stream

import (
	"bytes"
	"encoding/csv"
	"testing"
	"time"
)

func TestWriteMetadata(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Items, cfg.Start = 50, time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	cfg.Viral = []Viral{{Item: "V7", At: time.Minute, Share: 0.1, For: time.Minute}, {Item: "Vnew", At: time.Minute, Share: 0.1, For: time.Minute}}
	g, err := NewGenerator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := g.WriteMetadata(&buf, "https://img.example/{id}.jpg"); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// The header, 50 catalog items, and the viral item outside the catalog (V7 is in it).
	if len(rows) != 52 || rows[0][0] != "item_id" || rows[0][2] != "thumbnail_url" {
		t.Fatalf("%d rows, header %q", len(rows), rows[0])
	}
	titles := map[string]bool{}
	for i, r := range rows[1:51] {
		if r[0] != g.ItemID(i+1) || r[1] != Title(i+1) || r[2] != "https://img.example/"+r[0]+".jpg" {
			t.Fatalf("row %d: %q", i+1, r)
		}
		titles[r[1]] = true
	}
	if len(titles) != 50 {
		t.Fatalf("%d distinct titles among 50 items", len(titles))
	}
	if last := rows[51]; last[0] != "Vnew" || last[1] == "" {
		t.Fatalf("viral row %q", last)
	}
	buf.Reset()
	if err := g.WriteMetadata(&buf, ""); err != nil {
		t.Fatal(err)
	}
	rows, _ = csv.NewReader(&buf).ReadAll()
	if rows[1][2] != "" {
		t.Fatalf("no template must write no thumbnail, got %q", rows[1])
	}
}
