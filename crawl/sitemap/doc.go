// Package sitemap reads sitemaps (sitemaps.org protocol 0.9): urlsets and
// sitemap indexes, gzipped or not, streamed with bounded memory and the
// protocol's limits (50,000 entries, 50 MiB after gzip). The crawler reads
// a host's sitemaps (from its robots.txt Sitemap: lines, or /sitemap.xml)
// for URLs it does not know and for lastmod dates, which reach its
// frontier as hints (crawl.Hint). ResourceSync documents are sitemaps too;
// their rs: elements are skipped here.
package sitemap
