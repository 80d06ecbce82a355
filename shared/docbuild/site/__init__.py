"""A documentation site as a source: fetched by URL into a folder (:mod:`.crawl`), politely
(:mod:`.client`), one file per page (:mod:`.scope`) with a manifest (:mod:`.manifest`)."""
