"""The on-disk capture contract: events, manifest, canonical bytes, sink, reader, blobs, redaction."""
