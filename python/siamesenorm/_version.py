"""The package version: that of the C library it binds, MAJOR.MINOR.PATCH of the SN_VERSION_*
macros of include/siamesenorm.h. python/meson.build refuses to configure when the two differ,
so a version bump of the header must bump this line too (tools/version.sh prints the header's)."""

__version__ = "0.6.20"
