"""Small hand-written notes for the near-duplicate tests: a zh and an en note, an edit, another topic."""

ZH_NOTE = """# 推理加速周报：KV 缓存压缩

## 要点
- KVTC 在 Llama-3-8B 上把 KV 缓存压缩到原来的五分之一，长上下文问答的精度只下降 0.3 个百分点。
- 方法先对每一层的键值做主成分分析，再按重要性分配比特数，最后用熵编码存储。
- 作者在 vLLM 0.6 中实现了分页存储的适配，首字延迟增加不到百分之五。
- 与 H2O 和 SnapKV 相比，在 32K 上下文的检索任务上召回率更高。
- 压缩后的缓存可以换出到主机内存，恢复时按块解码，不必整体解压。
- 论文还讨论了与推测解码结合的可能，但没有给出实验。

## 评论
这项工作的工程价值在于不改模型权重，部署时只需替换缓存管理器。
需要核实的是吞吐数据只在单卡 A100 上测过，多卡张量并行下的通信开销没有报告。
如果结论成立，长文档摘要和代码补全这类场景的显存压力会明显下降。
下一步值得对比一下 SGLang 的 RadixAttention 在同样负载下的表现。
"""

ZH_NOTE_EDITED = ZH_NOTE.replace(
    "- 与 H2O 和 SnapKV 相比，在 32K 上下文的检索任务上召回率更高。",
    "- 在 32K 上下文的大海捞针测试中，它比 H2O 和 SnapKV 都更稳定。",
)

ZH_OTHER = """# 推理加速周报：投机解码

## 要点
- EAGLE-3 用目标模型的多层特征训练草稿头，在 Vicuna-13B 上接受长度达到六个词元。
- 训练数据来自模型自己的生成结果，因此分布偏移比用公开语料小得多。
- 在 SGLang 中部署后，批量为一时的解码速度提高了三倍多。
- 批量增大后收益递减，到六十四时只剩百分之二十左右的提升。
- 草稿树的宽度和深度需要按硬件调参，作者给出了一组经验值。
- 论文承认在数学推理任务上接受率偏低，原因是符号分布更分散。

## 评论
这项工作说明草稿模型的训练目标比结构更重要，值得在内部模型上复现。
需要核实的是加速比都是在单请求下测得的，线上高并发时的表现还不清楚。
如果要落地，可以先在客服问答这类输出较短的业务上试点。
下一步值得和 Medusa 以及 Lookahead 解码在同样的硬件上做一次横向对比。
"""

EN_NOTE = """# Inference notes: KV cache compression

## Key points
- KVTC compresses the KV cache of Llama-3-8B to a fifth of its size while long-context QA accuracy drops by 0.3 points.
- It runs a per-layer PCA over keys and values, allocates bits by importance, then entropy-codes the result.
- The authors ported it to paged storage in vLLM 0.6; time to first token grows by less than five percent.
- Compared with H2O and SnapKV it recalls more needles on 32K-token retrieval tasks.
- Compressed blocks can be offloaded to host memory and decoded block by block on the way back.
- The paper mentions combining it with speculative decoding but reports no experiment.

## Comment
The engineering value is that model weights stay untouched; deployment only swaps the cache manager.
Throughput was measured on a single A100, so the communication cost under tensor parallelism is unknown.
If the results hold, memory pressure for long-document summarisation and code completion drops a lot.
Next we should compare it with RadixAttention in SGLang under the same load.
"""

EN_NOTE_EDITED = EN_NOTE.replace(
    "- Compared with H2O and SnapKV it recalls more needles on 32K-token retrieval tasks.",
    "- On needle-in-a-haystack tests at 32K tokens it is steadier than both H2O and SnapKV.",
)

EN_OTHER = """# Inference notes: speculative decoding

## Key points
- EAGLE-3 trains its draft head on features from several layers of the target model and accepts six tokens per step on Vicuna-13B.
- Training data comes from the model's own generations, so the distribution shift is far smaller than with public corpora.
- Deployed in SGLang, decoding at batch size one became more than three times faster.
- The gain shrinks as the batch grows and is only about twenty percent at sixty-four.
- Draft tree width and depth must be tuned per GPU; the authors give a table of defaults.
- The paper admits acceptance rates are low on maths, where symbols are spread more evenly.

## Comment
The lesson is that the draft model's training objective matters more than its architecture.
All speed-ups were measured with a single request, so behaviour under heavy concurrency is unclear.
A first rollout could target customer-support answers, whose outputs are short.
Next we should compare it with Medusa and lookahead decoding on the same hardware.
"""
