// Package dashboard is the serving API's web page: plain HTML, CSS and JavaScript embedded in
// the binary (no build step, no CDN, so it works offline). It reads only the public API:
// /v1/trending/stream for the live lists (EventSource, falling back to polling /v1/trending),
// /v1/trending and /v1/windows for the calendar-window browser, and /v1/windows/config for the
// windows and the group picker (the lists per region: region= on each of those).
//
// In detail (DESIGN.md's file map has the line): the dashboard at `/` (live lists pushed
// over `/v1/trending/stream`, polled where that fails, each with its freshness; a decayed
// window's card ranked and labelled by score; speed layer vs exact per level; calendar
// windows; a group picker over all of them, `#region=eu`), static files embedded in the
// binary; headless-Chromium tests
package dashboard

import (
	"embed"
	"io/fs"
)

//go:embed static
var files embed.FS

// Files is the dashboard's file tree: index.html, app.js, style.css at its root.
var Files = func() fs.FS {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		panic("BUG: dashboard: " + err.Error())
	}
	return sub
}()
