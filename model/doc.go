// Package model is the vocabulary every layer of trending shares: the finished list and its
// items, the key that names a list, the error bound of a sketch estimate, the status a list
// states (live, provisional, exact), and the calendar spans windows align to. The speed
// layer's merger and the batch layer write lists; the serving layer reads them; none of them
// imports another's internals for these types. The view event and its wire format are in
// model/event.
//
// In detail (DESIGN.md's file map has the line): the vocabulary every layer shares:
// `List`, `Item` (with the typed `Topic` extension of a topics list's items), `Key`
// (window, calendar start, group value, score; `Name` is its stored and served name,
// `ParseName` reads it back), `Bound`, `Status` (live, provisional, exact),
// `Reconciliation`, decayed lists (`List.HalfLifeSeconds`, `Item.DecayedScore`, views the
// score rounded: `DecayedViews`; live speed lists only) and their partials
// (`Partial.Scored`), the calendar spans (`Spans`: hour, day, ISO week from Monday, month;
// `Align`, `Next`, `Back`), a list per group value's name (`hour/eu`, `ValidGroup`), the
// window names (`ValidWindowName`: the store takes any well-formed name, its writers and
// the API only the configured ones), and the list rules (`Validate`, `Normalize`); layers
// import it instead of each other (`internal/layers` tests the rule)
package model
