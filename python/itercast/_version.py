# The one place the version is written: pyproject.toml (scikit-build-core's regex provider) and the
# native module's build report (CMakeLists.txt) read it from here.
__version__ = "0.1.0"
