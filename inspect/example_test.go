package inspect_test

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http/httptest"
	"time"

	"github.com/otelqueue/otelqueue/inspect"
)

// Serve a page as JSON, as otelqueue.Inspector does with its Page: a
// script asks with ?format=json (or Accept: application/json), a browser
// gets HTML.
func ExampleServe() {
	page := func() inspect.Page {
		return inspect.Page{At: time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC), Queues: []inspect.Queue{{Name: "deployments", Depth: 3}}}
	}
	w := httptest.NewRecorder()
	inspect.Serve(w, httptest.NewRequest("GET", "/queues?format=json", nil), page, "")
	var got inspect.Page
	if err := json.NewDecoder(w.Result().Body).Decode(&got); err != nil {
		log.Fatal(err)
	}
	fmt.Println(w.Result().Header.Get("Content-Type"))
	fmt.Printf("%s: depth %d\n", got.Queues[0].Name, got.Queues[0].Depth)

	w = httptest.NewRecorder()
	inspect.Serve(w, httptest.NewRequest("POST", "/queues", nil), page, "")
	fmt.Println(w.Code)
	// Output:
	// application/json
	// deployments: depth 3
	// 405
}
