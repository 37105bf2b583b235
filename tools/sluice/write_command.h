// write_command.h: `sluice write`, a pipeline's samples into verified shards.
#pragma once

namespace sluice::cli {

// `sluice write PIPELINE.lua --to DIR --format tar|tfrecord [--shard-size
// 256MB | --shard-samples N] [settings]`: runs the pipeline once (one epoch,
// in order) through its workers and writes every sample to DIR by
// sluice::io::ShardWriter (sluice/io/shard_writer.h), which resumes a killed
// conversion. argv[0] is "write". Exit status: 0 written, 1 the pipeline or a
// write failed, 2 usage. Prints its own messages; never throws.
int write_command(int argc, char** argv);

}  // namespace sluice::cli
