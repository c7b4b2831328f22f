"""Reports: read result records, never run a model; write one self-contained HTML file plus CSV/JSON."""
