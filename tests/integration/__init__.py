"""Integration tests: real LangChain clients against the fake servers."""
