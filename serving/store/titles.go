package store

import (
	"context"
	"slices"

	"trending/model"
)

// Titler puts the display metadata (title, thumbnail) of a list's items on the list
// (internal/titles.Attacher). Safe for concurrent use.
type Titler interface {
	Attach(ctx context.Context, l *model.List)
}

// WithTitles returns st for the writers of served lists: every Put first attaches its items'
// metadata by t. The merger and the batch both write through it, so a list of any source and
// status (a live list, a closed hour's provisional and then exact list, a region's, the
// all-time base, a topics list) carries the same metadata for the same item, from the one
// source a process has. The list given to Put is not changed (its items are copied); Get,
// Range and Since pass through, and Close closes st. The result is no Versioner or Notifier:
// readers (the API) take st itself.
func WithTitles(st Store, t Titler) Store { return titled{Store: st, t: t} }

type titled struct {
	Store
	t Titler
}

// Put attaches the items' metadata, then writes the list.
func (s titled) Put(ctx context.Context, l model.List) error {
	l.Items = slices.Clone(l.Items)
	s.t.Attach(ctx, &l)
	return s.Store.Put(ctx, l)
}
