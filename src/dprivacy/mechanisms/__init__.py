"""Noise mechanisms as channels on finite metric spaces."""
