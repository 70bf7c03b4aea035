/* Linked into every executable of the ASan tree, never anywhere else: dlclose leaves the library
 * mapped, so that a leak allocated in one of Open MPI's components still names its module when
 * LeakSanitizer reports at exit, and lsan.supp can match it.
 * See Note "Open MPI's components stay loaded" (cmake/GradwireSanitizers.cmake). */
int dlclose(void *handle) {
  (void)handle;
  return 0;
}
