package report_test

import (
	"fmt"
	"os"
	"time"

	"github.com/horseshoe-crawler/horseshoe/report"
)

func exampleData() *report.Data {
	start := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	return &report.Data{
		Stats: report.Stats{Requests: 5, Started: start, Finished: start.Add(90 * time.Second), Complete: true},
		Pages: []report.Page{
			{URL: "http://10.0.0.10/", Status: 200, Class: report.ClassUnique},
			{URL: "http://10.0.0.9/", Status: 200, Class: report.ClassUnique},
			{URL: "http://10.0.0.9/copy", Status: 200, Class: report.ClassNearDuplicate,
				DuplicateOf: "http://10.0.0.9/", Similarity: 0.91, Method: report.MethodSupershingle},
			{URL: "http://10.0.0.9/again", Status: 200, Class: report.ClassExactDuplicate,
				DuplicateOf: "http://10.0.0.9/", Similarity: 1, Method: report.MethodExact},
		},
		Filter: "altavista 6x14 r=2",
	}
}

func ExampleHosts() {
	for _, h := range report.Hosts(exampleData()) {
		fmt.Printf("%-10s fetched=%d unique=%d dup=%.2f\n", h.Host, h.Fetched, h.Unique, h.DupRatio)
	}
	// Output:
	// 10.0.0.9   fetched=3 unique=1 dup=0.67
	// 10.0.0.10  fetched=1 unique=1 dup=0.00
}

func ExampleClusters() {
	for _, c := range report.Clusters(exampleData()) {
		fmt.Println(c.Representative)
		for _, m := range c.Members {
			fmt.Printf("  %.2f %s %s\n", m.Similarity, m.Method, m.URL)
		}
	}
	// Output:
	// http://10.0.0.9/
	//   1.00 exact http://10.0.0.9/again
	//   0.91 supershingle http://10.0.0.9/copy
}

func ExampleWriteText() {
	if err := report.WriteText(os.Stdout, exampleData()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// HORSESHOE CRAWL REPORT
	// ======================
	//   started    2025-03-14 09:00:00 UTC    finished   2025-03-14 09:01:30 UTC (1m30s)
	//   complete   yes (frontier exhausted)
	//   filter     altavista 6x14 r=2
	//   pages      4            requests   5            hosts   2
	//   duplicates 2 (1 exact, 1 near); 0 mirror-skipped, saving 0 requests
	//
	// PAGES BY CLASS
	// --------------
	//   unique                       2   50.0%  ########################################
	//   exact_duplicate              1   25.0%  ####################
	//   near_duplicate               1   25.0%  ####################
	//   mirror_skipped               0    0.0%
	//   robots_disallowed            0    0.0%
	//   not_html                     0    0.0%
	//   error                        0    0.0%
	//
	// HOSTS (2)
	// ---------
	//   HOST                                     FETCHED  UNIQUE   EXACT    NEAR  MIRROR   OTHER    DUP%
	//   10.0.0.9                                       3       1       1       1       0       0   66.7%
	//   10.0.0.10                                      1       1       0       0       0       0    0.0%
	//   TOTAL                                          4       2       1       1       0       0   50.0%
	//
	// TOP DUPLICATE CLUSTERS (1 of 1)
	// -------------------------------
	//    1. 2 duplicates of http://10.0.0.9/
	//       exact_duplicate 1.000 exact        http://10.0.0.9/again
	//       near_duplicate  0.910 supershingle http://10.0.0.9/copy
	//
	// MIRRORS (0)
	// -----------
	//   none
	//
	// REPLICATED PREFIXES (0)
	// -----------------------
	//   none
}

func ExampleWriteJSON() {
	d := &report.Data{
		Stats: report.Stats{Started: time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)},
		Pages: []report.Page{{URL: "http://a.test/", Host: "a.test", Status: 200, ContentType: "text/html",
			Title: "A & B", Class: report.ClassUnique, FetchedAt: time.Date(2025, 3, 14, 9, 0, 1, 0, time.UTC)}},
		Filter: "altavista 6x14 r=2",
		Curve:  []report.CurvePoint{{Jaccard: 0.9, Probability: 0.42}},
	}
	if err := report.WriteJSON(os.Stdout, d); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {
	//   "stats": {
	//     "pages": 1,
	//     "requests": 0,
	//     "by_class": {
	//       "error": 0,
	//       "exact_duplicate": 0,
	//       "mirror_skipped": 0,
	//       "near_duplicate": 0,
	//       "not_html": 0,
	//       "robots_disallowed": 0,
	//       "unique": 1
	//     },
	//     "hosts": 1,
	//     "started": "2025-03-14T09:00:00Z",
	//     "complete": false
	//   },
	//   "pages": [
	//     {
	//       "url": "http://a.test/",
	//       "host": "a.test",
	//       "status": 200,
	//       "content_type": "text/html",
	//       "title": "A & B",
	//       "class": "unique",
	//       "depth": 0,
	//       "fetched_at": "2025-03-14T09:00:01Z"
	//     }
	//   ],
	//   "mirrors": [],
	//   "replicated_prefixes": [],
	//   "host_notes": [],
	//   "irrelevant_params": [],
	//   "missing_subtrees": [],
	//   "filter": "altavista 6x14 r=2",
	//   "filter_curve": [
	//     {
	//       "jaccard": 0.9,
	//       "probability": 0.42
	//     }
	//   ]
	// }
}
