"""Model definitions for the collection zoo, built from torch.nn only (no weights)."""
