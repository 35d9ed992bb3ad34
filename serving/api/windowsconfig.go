package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"trending/model"
	"trending/model/windowset"
)

// GET /v1/windows/config: the windows this deployment serves (Config.Windows) and its lists per
// group value, so a client
// (the dashboard's pickers) builds its choices from the server instead of knowing them. The
// body is fixed for the process's life.

// WindowsConfigResponse is GET /v1/windows/config's body.
type WindowsConfigResponse struct {
	// Live are the names GET /v1/trending?window= takes without start, in configured order.
	Live []string `json:"live"`
	// Calendar are the spans it takes with start (and /v1/windows), shortest first.
	Calendar []model.Period `json:"calendar"`
	// Aliases are other accepted names and the live window each means (1h: hour), by name.
	Aliases []WindowAlias `json:"aliases"`
	// Windows describe every configured window.
	Windows []WindowConfig `json:"windows"`
	// Groups says which lists per group value every window has besides the list of all
	// items (GET /v1/trending?window=hour&region=eu); absent when none.
	Groups *GroupsConfig `json:"groups,omitempty"`
}

// GroupsConfig is the lists per group value as GET /v1/windows/config shows them.
type GroupsConfig struct {
	// By is the group dimension, also the query parameter that picks a value: region.
	By string `json:"by"`
	// Values are the values with lists, in configured order; empty with Every.
	Values []string `json:"values"`
	// Every: every value seen gets lists, up to Max per speed partition (the dashboard then
	// asks the API which exist).
	Every bool `json:"every"`
	Max   int  `json:"max,omitempty"`
}

// WindowAlias is one alias of a live window.
type WindowAlias struct {
	Name   string `json:"name"`
	Window string `json:"window"`
}

// WindowConfig is one configured window as GET /v1/windows/config shows it.
type WindowConfig struct {
	Name string         `json:"name"`
	Kind windowset.Kind `json:"kind"`
	// Length and Bucket (sliding windows) as durations such as 1h, 24h or 7d.
	Length string       `json:"length,omitempty"`
	Bucket string       `json:"bucket,omitempty"`
	Span   model.Period `json:"span,omitempty"`
	// HalfLife is a decayed window's half-life (1h, 30m).
	HalfLife string `json:"half_life,omitempty"`
	// Mode is how the speed layer counts it: exact, sketch or auto (resolved by the speed
	// layer: exact up to 24 hours, sketch beyond).
	Mode windowset.Mode `json:"mode"`
}

func windowsConfigBody(ws windowset.Set) []byte {
	resp := WindowsConfigResponse{Live: ws.Live(), Calendar: ws.Calendar(), Aliases: []WindowAlias{}, Windows: make([]WindowConfig, 0, len(ws.Windows))}
	if resp.Live == nil {
		resp.Live = []string{}
	}
	if resp.Calendar == nil {
		resp.Calendar = []model.Period{}
	}
	for a, w := range ws.Aliases() {
		resp.Aliases = append(resp.Aliases, WindowAlias{Name: a, Window: w})
	}
	slices.SortFunc(resp.Aliases, func(a, b WindowAlias) int { return strings.Compare(a.Name, b.Name) })
	for _, w := range ws.Windows {
		c := WindowConfig{Name: w.Name, Kind: w.Kind, Span: w.Span, Mode: w.Mode}
		if c.Mode == "" {
			c.Mode = windowset.Auto
		}
		if w.Kind == windowset.Sliding {
			c.Length, c.Bucket = windowset.FormatDuration(w.Length), windowset.FormatDuration(w.Bucket)
		}
		if w.Kind == windowset.Decayed {
			c.HalfLife = windowset.FormatDuration(w.HalfLife)
		}
		resp.Windows = append(resp.Windows, c)
	}
	if g := ws.Groups; g.On() {
		resp.Groups = &GroupsConfig{By: g.By, Values: append([]string{}, g.Values...), Every: g.Every, Max: g.Limit()}
		if !g.Every {
			resp.Groups.Max = 0
		}
	}
	body, err := json.Marshal(resp)
	if err != nil {
		panic("BUG: encode windows config: " + err.Error())
	}
	return body
}

func (s *Server) handleWindowsConfig(w http.ResponseWriter, r *http.Request) {
	if r.URL.RawQuery != "" {
		writeError(w, badRequest(codeUnknownParameter, "GET /v1/windows/config takes no parameters"))
		return
	}
	w.Header()["Cache-Control"] = s.cacheControl
	writeBody(w, r, http.StatusOK, s.windowsConfig)
}
