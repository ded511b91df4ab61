// A made-up grammar matcher, for the miner's test: stream-style checks and logs.
#define XGRAMMAR_CHECK(x) \
  if (!(x)) LogFatal(__FILE__, __LINE__).stream() << "Check failed: (" #x << ") is false: "

void Matcher::FillMask(int32_t row, int32_t rows) {
  XGRAMMAR_CHECK(row >= 0 && row < rows)
      << "Mask row " << row << " lies outside the "
         "batch of " << rows << " rows";
  XGRAMMAR_CHECK(mask_.ndim == 2);
  XGRAMMAR_CHECK(schema.count("type")) << "a schema without a type";
  if (terminated_) {
    XGRAMMAR_LOG(WARNING) << "Filling a mask for a finished matcher";
  }
  XGRAMMAR_LOG(FATAL) << "Stop token " << Describe(row, rows) << " was never declared";
  LOG(INFO) << "mask filled for row " << row;
}
