// Package model is the vocabulary every layer of trending shares: the finished list and its
// items, the key that names a list, the error bound of a sketch estimate, the status a list
// states (live, provisional, exact), and the calendar periods windows align to (Period). The speed
// layer's merger and the batch layer write lists; the serving layer reads them; none of them
// imports another's internals for these types. The view event and its wire format are in
// model/event.
//
// In detail (DESIGN.md's file map has the line): the vocabulary every layer shares:
// `List`, `Item` (with the typed `Topic` extension of a topics list's items), `Key`
// (window, calendar start, group value, score; `Name` is its stored and served name,
// `ParseName` reads it back), `Bound`, `Baseline` (what a topics list's expected counts
// rest on: days used of wanted, days the object store could not give, their bound),
// `Status` (live, provisional, exact), `Reconciliation`, decayed lists
// (`List.HalfLifeSeconds`, `Item.DecayedScore`, views the score rounded: `DecayedViews`;
// live speed lists only) and their partials (`Partial.Scored`), the partial's list kind
// (`Partial.Kind`: items, scored, topics, since; absent from an older producer, `KindOf`
// infers it as before; `Validate`, called by `DecodePartial`, refuses a kind its fields
// contradict: `TestPartialKind`), the calendar periods (`period.go`: `Period`, `Hour`,
// `Day`, ISO `Week` from Monday, `Month`, serialized by their names as before;
// `ParsePeriod` and the methods `Align`, `Next`, `Back`, `Count`, `Parts`, `Label`,
// `Starts`, and `StartMinute`/`EndMinute` for the speed core: no package switches on a
// period's name, `TestNoSwitchOnPeriodNames` walks the source), a list per group value's
// name (`hour/eu`, `ValidGroup`), the window names (`ValidWindowName`: the store takes any
// well-formed name, its writers and the API only the configured ones), and the list rules
// (`Validate`, `Normalize`); layers import it instead of each other (`internal/layers`
// tests the rule)
package model
