module @jit_block {
  func.func public @main(%arg0: tensor<2x64x768xf32>, %arg1: tensor<768x2304xf32>, %arg2: tensor<50x768xf32>, %arg3: tensor<2x64xi32>) -> tensor<2x64x2304xf32> {
    %0 = call @take(%arg2, %arg3) : (tensor<50x768xf32>, tensor<2x64xi32>) -> tensor<2x64x768xf32> loc(#loc3)
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [2] : (tensor<2x64x768xf32>, tensor<f32>) -> tensor<2x64xf32>
    %2 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [2] x [0] : (tensor<2x64x768xf32>, tensor<768x2304xf32>) -> tensor<2x64x2304xf32>
    return %2 : tensor<2x64x2304xf32>
  }
  func.func private @take(%arg0: tensor<50x768xf32>, %arg1: tensor<2x64xi32>) -> tensor<2x64x768xf32> {
    %0 = "stablehlo.gather"(%arg0, %arg1) : (tensor<50x768xf32>, tensor<2x64xi32>) -> tensor<2x64x768xf32>
    return %0 : tensor<2x64x768xf32>
  }
}
#loc3 = loc("embed")
