"""The bottom layer: run requests, paths, the record and its file, the engine registry. Imports only models."""
