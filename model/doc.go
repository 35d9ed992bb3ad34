// Package model is the vocabulary every layer of trending shares: the finished list and its
// items, the key that names a list, the error bound of a sketch estimate, the status a list
// states (live, provisional, exact), and the calendar periods windows align to (Period). The speed
// layer's merger and the batch layer write lists; the serving layer reads them; none of them
// imports another's internals for these types. The view event and its wire format are in
// model/event.
package model
